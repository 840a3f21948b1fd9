"""dCor per call, this checkout against an earlier revision, on the same tests (same seeds).

The earlier revision's source is exported with ``git archive`` into a temporary directory and
run in a subprocess with that directory first on ``PYTHONPATH`` (same interpreter and
packages); this checkout runs in another subprocess. Each runs the same seven tests of one
instance (|S| = 0, 1, 2; a fresh test object per call, so every call computes its residuals;
the first call also pays the one-time numba load of either version) and prints per call its
milliseconds and p-value; then the two are compared: median ms per call after the first,
ratio, max |Δp| and max |Δ statistic|. No pass/fail.

    python benchmarks/bench_dcor_versions.py --before 52e25b2 [--instances wild/0,lg/0]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

CHILD = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    from heuresis_env.generation.instances import InstanceKey, generate_instance
    from heuresis_env.discovery.citests.dcor import DistanceCorrelation
    family, index = sys.argv[1].split("/")
    data = np.array(generate_instance(InstanceKey(family, "dev", int(index))).X)
    d = data.shape[1]
    rng = np.random.default_rng(3)
    tests = [(0, 1, ())] + [
        (x, y, tuple(sorted(rng.choice([v for v in range(d) if v not in (x, y)],
                                       size=size, replace=False).tolist())))
        for size in (1, 2) for x, y in ((2, 3), (4, 5), (6, 7))]
    rows = []
    for x, y, s in tests:
        tester = DistanceCorrelation(data, seed=1, disk_cache=False)
        start = time.perf_counter()
        result = tester.test(x, y, s)
        rows.append({"test": [x, y, list(s)], "p": result.p_value,
                     "statistic": result.statistic, "ms": 1000 * (time.perf_counter() - start)})
    print(json.dumps(rows))
    """
)


def run_version(source: Path | None, instance: str) -> list[dict]:
    """The seven calls in a subprocess, with ``source`` first on the path (None: this checkout)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
           "HEURESIS_CACHE_DIR": tempfile.mkdtemp(prefix="dcor-versions-")}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    output = subprocess.run([sys.executable, "-c", CHILD, instance], env=env, check=True,
                            capture_output=True, text=True, cwd=tempfile.gettempdir())
    return json.loads(output.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="git revision of the earlier code")
    parser.add_argument("--instances", default="wild/0,lg/0")
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    print(f"load average {os.getloadavg()[0]:.1f} at start")
    with tempfile.TemporaryDirectory(prefix="dcor-before-") as source:
        archive = subprocess.run(["git", "-C", str(root), "archive", args.before],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", source], input=archive, check=True)
        for instance in args.instances.split(","):
            before = run_version(Path(source), instance)
            after = run_version(None, instance)
            print(f"\n{instance}, n = 600, 199 permutations: ms per call (fresh object), p-value")
            print(f"    {'test':<18} {args.before + ' ms':>12} {'now ms':>8} {'p before':>9} "
                  f"{'p now':>7}")
            for b, a in zip(before, after):
                test = (b["test"][0], b["test"][1], tuple(b["test"][2]))
                print(f"    {str(test):<18} {b['ms']:>12.1f} {a['ms']:>8.1f} {b['p']:>9.4f} "
                      f"{a['p']:>7.4f}")
            median_before = sorted(r["ms"] for r in before[1:])[len(before[1:]) // 2]
            median_after = sorted(r["ms"] for r in after[1:])[len(after[1:]) // 2]
            print(f"    median after the first call: {median_before:.0f} ms → "
                  f"{median_after:.1f} ms ({median_before / median_after:.0f}×); max |Δp| "
                  f"{max(abs(b['p'] - a['p']) for b, a in zip(before, after)):.1e}, max "
                  f"|Δ statistic| "
                  f"{max(abs(b['statistic'] - a['statistic']) for b, a in zip(before, after)):.1e}")
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
