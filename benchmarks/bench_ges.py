"""Time our GES (``heuresis_env.discovery.ges.ges_bic``) against causal-learn's ``ges`` (the
reference implementation) on the same data in the same run, and check they agree.

For each instance (default: one lg instance and the BNLearn networks of the shelf, n = 600)
it runs both with the BIC score (λ = 0.5) and prints the CPU seconds of each, the ratio,
and whether the CPDAG, the score (bit for bit) and the operator sequence are the same.
causal-learn's run is skipped (and said so) when ``--reference-limit`` CPU seconds of an
earlier run show it would not finish in reasonable time: it is exponential in the worst
case (all semi-directed paths are enumerated). One BLAS thread. Usage::

    python benchmarks/bench_ges.py                       # the default list
    python benchmarks/bench_ges.py --instances lg/0,bnlearn-alarm/0 [--split test]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from heuresis_env.discovery.causallearn_bridge import graph_from_causallearn, silenced_stdout
from heuresis_env.discovery.ges import ges_bic
from heuresis_env.generation import InstanceKey
from heuresis_env.generation.instances import generate_instance
from heuresis_env.graphs import pdag_to_graph

DEFAULT = ("lg/0,bnlearn-sachs/0,bnlearn-child/0,bnlearn-insurance/0,bnlearn-alarm/0,"
           "bnlearn-hailfinder/0,bnlearn-hepar2/0,bnlearn-win95pts/0,bnlearn-andes/0")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", default=DEFAULT,
                        help="comma-separated family/index list")
    parser.add_argument("--split", default="test")
    parser.add_argument("--reference-limit", type=float, default=600.0,
                        help="skip causal-learn on networks larger than one it took longer "
                             "than this many CPU seconds on")
    args = parser.parse_args()
    from causallearn.search.ScoreBased.GES import ges

    print(f"{'instance':28} {'d':>4} {'ours s':>8} {'causal-learn s':>15} {'ratio':>7}  same")
    too_slow_at: int | None = None
    total_ours = total_theirs = 0.0
    for spec in args.instances.split(","):
        family, index = spec.rsplit("/", 1)
        instance = generate_instance(InstanceKey(family, args.split, int(index)))
        data, names = np.array(instance.X), instance.names
        with threadpool_limits(1):
            start = time.process_time()
            ours = ges_bic(data)
            t_ours = time.process_time() - start
            if too_slow_at is not None and instance.d >= too_slow_at:
                print(f"{spec:28} {instance.d:4d} {t_ours:8.2f} {'skipped':>15} {'':>7}  "
                      f"(causal-learn took over {args.reference_limit:g} s at d = {too_slow_at})")
                continue
            start = time.process_time()
            with silenced_stdout():
                theirs = ges(data, score_func="local_score_BIC", maxP=None,
                             parameters={"lambda_value": 0.5})
            t_theirs = time.process_time() - start
        if t_theirs > args.reference_limit:
            too_slow_at = instance.d
        same = (pdag_to_graph(ours.pdag, names) == graph_from_causallearn(theirs["G"], names)
                and float(np.ravel(ours.score)[0]) == float(np.ravel(theirs["score"])[0])
                and ours.inserts == [(int(i), int(j), tuple(int(x) for x in t))
                                     for i, j, t in theirs["update1"]]
                and ours.deletes == [(int(i), int(j), tuple(int(x) for x in h))
                                     for i, j, h in theirs["update2"]])
        total_ours += t_ours
        total_theirs += t_theirs
        print(f"{spec:28} {instance.d:4d} {t_ours:8.2f} {t_theirs:15.2f} "
              f"{t_theirs / max(t_ours, 1e-9):6.1f}×  {'yes' if same else 'NO'}", flush=True)
    if total_ours:
        print(f"{'total (both ran)':28} {'':4} {total_ours:8.2f} {total_theirs:15.2f} "
              f"{total_theirs / total_ours:6.1f}×")


if __name__ == "__main__":
    main()
