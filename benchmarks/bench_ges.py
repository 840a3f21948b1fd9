"""Time our GES (``heuresis_env.discovery.ges.ges_bic``) against causal-learn's ``ges`` (the
reference implementation) on the same data in the same run, and check they agree.

For each instance (default: one lg instance and the BNLearn networks of the shelf, n = 600)
it runs both with the BIC score (λ = 0.5) and prints the CPU seconds of each, the ratio,
and whether the CPDAG, the score (bit for bit) and the operator sequence are the same.
causal-learn's run is in a child process stopped after ``--reference-limit`` seconds (it is
exponential in the worst case: it enumerates semi-directed paths and marks subsets in time
quadratic in their number); the row then gives the limit and the ratio as a lower bound.
One BLAS thread. Usage::

    python benchmarks/bench_ges.py                       # the default list
    python benchmarks/bench_ges.py --instances lg/0,bnlearn-alarm/0 [--split test]
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from multiprocessing.connection import Connection

import numpy as np
from threadpoolctl import threadpool_limits

from heuresis_env.discovery.algorithms import AlgorithmFailure, require_nonsingular
from heuresis_env.discovery.causallearn_bridge import graph_from_causallearn, silenced_stdout
from heuresis_env.discovery.ges import ges_bic
from heuresis_env.generation import InstanceKey
from heuresis_env.generation.instances import generate_instance
from heuresis_env.graphs import pdag_to_graph

DEFAULT = ("lg/0,bnlearn-sachs/0,bnlearn-child/0,bnlearn-insurance/0,bnlearn-alarm/0,"
           "bnlearn-hailfinder/0,bnlearn-hepar2/0,bnlearn-win95pts/0,bnlearn-andes/0")


def _reference(data: np.ndarray, names: tuple[str, ...], connection: Connection) -> None:
    """causal-learn's ges in a child process: sends its CPU seconds, graph, score and
    operators."""
    from causallearn.search.ScoreBased.GES import ges

    with threadpool_limits(1):
        start = time.process_time()
        with silenced_stdout():
            record = ges(data, score_func="local_score_BIC", maxP=None,
                         parameters={"lambda_value": 0.5})
        seconds = time.process_time() - start
    connection.send((seconds, graph_from_causallearn(record["G"], names),
                     float(np.ravel(record["score"])[0]),
                     [(int(i), int(j), tuple(int(x) for x in t)) for i, j, t in record["update1"]],
                     [(int(i), int(j), tuple(int(x) for x in h)) for i, j, h in record["update2"]]))


def reference_run(data: np.ndarray, names: tuple[str, ...], limit: float) -> tuple | None:
    """causal-learn's run, or None when it did not end within ``limit`` seconds."""
    receive, send = multiprocessing.get_context("fork").Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_reference,
                                                        args=(data, names, send))
    child.start()
    answer = receive.recv() if receive.poll(limit) else None
    child.kill()
    child.join()
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", default=DEFAULT,
                        help="comma-separated family/index list")
    parser.add_argument("--split", default="test")
    parser.add_argument("--reference-limit", type=float, default=600.0,
                        help="stop causal-learn's run after this many seconds")
    args = parser.parse_args()

    ges_bic(np.random.default_rng(0).normal(size=(50, 3)))  # imports outside the timings
    print(f"{'instance':28} {'d':>4} {'ours s':>8} {'causal-learn s':>15} {'ratio':>7}  same")
    total_ours = total_theirs = 0.0
    for spec in args.instances.split(","):
        family, index = spec.rsplit("/", 1)
        instance = generate_instance(InstanceKey(family, args.split, int(index)))
        data, names = np.array(instance.X), instance.names
        try:
            require_nonsingular(data, names, "GES (BIC score)")
        except AlgorithmFailure as exc:
            print(f"{spec:28} {instance.d:4d} refused by both: {exc}")
            continue
        with threadpool_limits(1):
            start = time.process_time()
            ours = ges_bic(data)
            t_ours = time.process_time() - start
        theirs = reference_run(data, names, args.reference_limit)
        if theirs is None:
            print(f"{spec:28} {instance.d:4d} {t_ours:8.2f} {'> ' + format(args.reference_limit, 'g'):>15} "
                  f"≥{args.reference_limit / max(t_ours, 1e-9):5.1f}×  (stopped)", flush=True)
            continue
        t_theirs, graph, score, update1, update2 = theirs
        same = (pdag_to_graph(ours.pdag, names) == graph
                and float(np.ravel(ours.score)[0]) == score
                and ours.inserts == update1 and ours.deletes == update2)
        total_ours += t_ours
        total_theirs += t_theirs
        print(f"{spec:28} {instance.d:4d} {t_ours:8.2f} {t_theirs:15.2f} "
              f"{t_theirs / max(t_ours, 1e-9):6.1f}×  {'yes' if same else 'NO'}", flush=True)
    if total_ours:
        print(f"{'total (both ran)':28} {'':4} {total_ours:8.2f} {total_theirs:15.2f} "
              f"{total_theirs / total_ours:6.1f}×")


if __name__ == "__main__":
    main()
