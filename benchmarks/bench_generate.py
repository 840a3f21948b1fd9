"""Time the generation of the whole development split: 6 families × 100 instances.

Prints instances/second for generation alone and for generation + saving (JSON + NPZ per
instance, with the split manifest), and a ratio against a reference measured in the same run:
a bare linear-Gaussian SEM sampler in plain NumPy (ER graph, ``matmul``, NumPy's native
normals, no record, no portability care) at the same d and n — the floor any generator
pays. Usage::

    python benchmarks/bench_generate.py [--count 100] [--d 10] [--n 600] [--out DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from heuresis_env.generation.families import available_families
from heuresis_env.generation.instances import (
    InstanceKey,
    generate_instance,
    save_split,
    split_directory,
)


def reference_sampler(d: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """The bare minimum: an ER DAG, linear weights, X = E (I − B)⁻¹, standardized."""
    order = rng.permutation(d)
    upper = np.triu(rng.random((d, d)) < 2 / (d - 1), k=1)
    weights = upper * rng.uniform(0.5, 2.0, (d, d)) * rng.choice([-1.0, 1.0], (d, d))
    weights = weights[np.ix_(order, order)]
    noise = rng.standard_normal((n, d)) * rng.uniform(0.5, 2.0, d)
    data = noise @ np.linalg.inv(np.eye(d) - weights)
    return (data - data.mean(0)) / data.std(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100, help="instances per family")
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--out", default=None, help="where to save (default: a temp dir)")
    args = parser.parse_args()
    families = available_families()[:6]
    total = args.count * len(families)

    start = time.perf_counter()
    rng = np.random.default_rng(0)
    for _ in range(total):
        reference_sampler(args.d, args.n, rng)
    reference_seconds = time.perf_counter() - start

    start = time.perf_counter()
    per_family = {}
    instances = {}
    for family in families:
        family_start = time.perf_counter()
        instances[family] = [generate_instance(InstanceKey(family, "dev", i, d=args.d, n=args.n))
                             for i in range(args.count)]
        per_family[family] = time.perf_counter() - family_start
    generate_seconds = time.perf_counter() - start

    with tempfile.TemporaryDirectory() as temporary:
        root = args.out or temporary
        start = time.perf_counter()
        for family in families:
            save_split(instances[family], split_directory(root, family, "dev"))
        save_seconds = time.perf_counter() - start

    print(f"dev split: {len(families)} families × {args.count} instances, d={args.d}, "
          f"n={args.n}")
    for family, seconds in per_family.items():
        print(f"  {family:<9} {seconds:6.2f} s  ({args.count / seconds:7.1f} instances/s)")
    print(f"generate            {generate_seconds:6.2f} s  ({total / generate_seconds:7.1f} "
          "instances/s)")
    print(f"generate + save     {generate_seconds + save_seconds:6.2f} s  "
          f"({total / (generate_seconds + save_seconds):7.1f} instances/s)")
    print(f"reference (bare numpy linear SEM) {reference_seconds:6.3f} s  "
          f"({total / reference_seconds:7.1f} instances/s)")
    print(f"ratio generate / reference: {generate_seconds / reference_seconds:6.1f}×")


if __name__ == "__main__":
    main()
