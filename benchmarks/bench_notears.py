"""Time NOTEARS-MLP on one d = 10, n = 600 nonlinear instance (``anm``/dev/0 by default).

Prints the time of one full run (defaults: hidden 10, λ₁ = λ₂ = 0.01, seed 0) of
``heuresis_env.discovery.notears.notears_mlp`` with each engine beside a straightforward
reference-style implementation measured in the same run: the reference code's
``NotearsMLP`` as an ``nn.Module`` (fc1_pos, fc1_neg, ``LocallyConnected``), autograd over the
whole objective, parameters flattened and copied per evaluation (xunzheng/notears
``nonlinear.py`` + ``LBFGSBScipy``, in float64, with the same tr exp as ours so only the
evaluation machinery differs). Also prints the evaluation counts, ms per evaluation, and how
far the runs' raw weights and thresholded graphs are apart; ``--noise-floor`` adds the
reference with ``scipy.linalg.expm`` (the reference code exactly), whose distance from the
first row is how far rounding alone moves a full run. All runs use one torch thread and one
BLAS thread. Usage::

    python benchmarks/bench_notears.py [--family anm] [--index 0] [--repeats 1] [--noise-floor]
    python benchmarks/bench_notears.py --per-family 2 [--n 600] [--noise-floor]
    python benchmarks/bench_notears.py --time anm/0,mixed/0 [--n 200]
    python benchmarks/bench_notears.py --lbfgsb anm/0,lg/0,wild/0 [--repeats 2]

``--per-family K`` runs the reference code (autograd, ``scipy.linalg.expm``) and
``notears_mlp`` on the first K dev instances of every family instead: per instance the time
of each, their evaluation counts, how far their raw weights are apart, how many thresholded
edges differ, and each one's adjacency F1 against the instance's true DAG; then the totals.
With ``--noise-floor`` it also runs the reference code with :func:`expm_nonnegative` for its
exponential: how often rounding alone changes the reference's own graph.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np
import scipy.linalg
import scipy.optimize as sopt
import torch
from threadpoolctl import threadpool_limits
from torch import nn

from heuresis_env.discovery.notears import expm_nonnegative, notears_mlp


class LocallyConnected(nn.Module):
    """d independent linear maps [n, d, m_in] → [n, d, m_out] (the reference's layer)."""

    def __init__(self, num_linear: int, input_features: int, output_features: int,
                 bias: bool = True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_linear, input_features, output_features,
                                               dtype=torch.float64))
        self.bias = (nn.Parameter(torch.empty(num_linear, output_features, dtype=torch.float64))
                     if bias else None)
        bound = math.sqrt(1.0 / input_features)
        with torch.no_grad():
            nn.init.uniform_(self.weight, -bound, bound)
            if self.bias is not None:
                nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        out = torch.matmul(inputs.unsqueeze(dim=2), self.weight.unsqueeze(dim=0)).squeeze(dim=2)
        return out + self.bias if self.bias is not None else out


class TraceExpm(torch.autograd.Function):
    """tr(exp(A)) with gradient exp(A)ᵀ, exp(A) by the given NumPy function."""

    @staticmethod
    def forward(ctx, matrix: torch.Tensor, expm: Callable[[np.ndarray], np.ndarray]
                ) -> torch.Tensor:
        exponential = torch.from_numpy(expm(matrix.detach().numpy()))
        ctx.save_for_backward(exponential)
        return torch.as_tensor(float(torch.trace(exponential)), dtype=matrix.dtype)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (exponential,) = ctx.saved_tensors
        return grad_output * exponential.t(), None


class ReferenceNotearsMLP(nn.Module):
    """The reference ``NotearsMLP(dims=[d, hidden, 1])`` in float64."""

    def __init__(self, d: int, hidden: int, bias: bool = True,
                 expm: Callable[[np.ndarray], np.ndarray] = expm_nonnegative):
        super().__init__()
        self.d, self.hidden, self.expm = d, hidden, expm
        self.fc1_pos = nn.Linear(d, d * hidden, bias=bias, dtype=torch.float64)
        self.fc1_neg = nn.Linear(d, d * hidden, bias=bias, dtype=torch.float64)
        self.fc2 = nn.ModuleList([LocallyConnected(d, hidden, 1, bias)])

    def bounds(self) -> list[tuple[float | None, float | None]]:
        """L-BFGS-B bounds per flat parameter: fc1 weights ≥ 0, and 0 on self-loops."""
        fc1 = [(0.0, 0.0) if i == j else (0.0, None)
               for j in range(self.d) for _ in range(self.hidden) for i in range(self.d)]
        bounds: list[tuple[float | None, float | None]] = []
        for p in self.parameters():
            weight = p is self.fc1_pos.weight or p is self.fc1_neg.weight
            bounds += fc1 if weight else [(None, None)] * p.numel()
        return bounds

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        out = (self.fc1_pos(inputs) - self.fc1_neg(inputs)).view(-1, self.d, self.hidden)
        for layer in self.fc2:
            out = layer(torch.sigmoid(out))
        return out.squeeze(dim=2)

    def fc1_squared(self) -> torch.Tensor:
        weight = (self.fc1_pos.weight - self.fc1_neg.weight).view(self.d, self.hidden, self.d)
        return torch.sum(weight * weight, dim=1).t()

    def h_func(self) -> torch.Tensor:
        return TraceExpm.apply(self.fc1_squared(), self.expm) - self.d

    def l2_reg(self) -> torch.Tensor:
        reg = torch.sum((self.fc1_pos.weight - self.fc1_neg.weight) ** 2)
        for layer in self.fc2:
            reg = reg + torch.sum(layer.weight ** 2)
        return reg

    def fc1_l1_reg(self) -> torch.Tensor:
        return torch.sum(self.fc1_pos.weight + self.fc1_neg.weight)


def set_flat(model: nn.Module, flat: np.ndarray) -> None:
    """Copy a flat float64 vector into the parameters, in ``parameters()`` order."""
    offset = 0
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(flat[offset:offset + p.numel()]).view_as(p))
            offset += p.numel()


def get_flat(model: nn.Module) -> np.ndarray:
    """The parameters as one flat float64 vector."""
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy().copy()


def reference_objective(model: ReferenceNotearsMLP, x_torch: torch.Tensor, flat: np.ndarray,
                        rho: float, alpha: float, lambda1: float, lambda2: float
                        ) -> tuple[float, np.ndarray]:
    """The reference's closure: set the parameters, autograd through the whole objective."""
    set_flat(model, flat)
    params = list(model.parameters())
    for p in params:
        p.grad = None
    n = x_torch.shape[0]
    loss = 0.5 / n * torch.sum((model(x_torch) - x_torch) ** 2)
    h_value = model.h_func()
    value = (loss + 0.5 * rho * h_value * h_value + alpha * h_value
             + 0.5 * lambda2 * model.l2_reg() + lambda1 * model.fc1_l1_reg())
    value.backward()
    grad = torch.cat([p.grad.reshape(-1) for p in params])
    return float(value.item()), grad.numpy().astype(np.float64)


def reference_notears_mlp(x: np.ndarray, hidden: int = 10, lambda1: float = 0.01,
                          lambda2: float = 0.01, max_iter: int = 100, h_tol: float = 1e-8,
                          rho_max: float = 1e16, seed: int = 0, max_inner_iter: int = 15000,
                          bias: bool = True,
                          expm: Callable[[np.ndarray], np.ndarray] = expm_nonnegative
                          ) -> tuple[np.ndarray, int]:
    """Reference-style NOTEARS-MLP: raw weights (L2 norms of fc1) and the evaluation count.
    Seeds torch's global generator, as the reference does."""
    torch.manual_seed(seed)
    model = ReferenceNotearsMLP(x.shape[1], hidden, bias, expm)
    bounds = model.bounds()
    x_torch = torch.from_numpy(np.array(x, dtype=np.float64))
    rho, alpha, h = 1.0, 0.0, np.inf
    evaluations = 0

    def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
        nonlocal evaluations
        evaluations += 1
        return reference_objective(model, x_torch, flat, rho, alpha, lambda1, lambda2)

    for _ in range(max_iter):
        h_new = h
        while rho < rho_max:
            solution = sopt.minimize(objective, get_flat(model), method="L-BFGS-B", jac=True,
                                     bounds=bounds, options={"maxiter": max_inner_iter})
            set_flat(model, solution.x)
            with torch.no_grad():
                h_new = float(model.h_func().item())
            if h_new > 0.25 * h:
                rho *= 10
            else:
                break
        h = h_new
        alpha += rho * h
        if h <= h_tol or rho >= rho_max:
            break
    with torch.no_grad():
        return torch.sqrt(model.fc1_squared()).numpy().copy(), evaluations


def agreement(per_family: int, n: int | None, noise_floor: bool = False) -> None:
    """The reference code and ``notears_mlp`` side by side on ``per_family`` dev instances of
    every family (see the module's text); ``noise_floor`` adds the reference again with
    :func:`expm_nonnegative` for its exponential, and how far that run is from the first."""
    from heuresis_env.discovery.notears import _finish
    from heuresis_env.generation.families import BENCHMARK_FAMILIES
    from heuresis_env.generation.instances import InstanceKey, generate_instance
    from heuresis_env.graphs import Graph
    from heuresis_env.metrics import score_graph

    def f1(raw: np.ndarray, names: tuple[str, ...], truth: Graph) -> float:
        adjacency = _finish(raw, 0.0, 0.0, 0, 1e-8, 0.3, 0).adjacency  # threshold, DAG
        return float(score_graph(Graph.from_dag(adjacency, names), truth)["f1"])

    print(f"{'instance':<18}{'ref s':>8}{'ours s':>8}{'ratio':>7}{'ref evals':>10}"
          f"{'our evals':>10}{'max|Δraw|':>11}{'Δedges':>8}{'ref F1':>8}{'our F1':>8}"
          + (f"{'floor Δraw':>12}{'floor Δedges':>13}" if noise_floor else ""))
    totals = {"ref": 0.0, "ours": 0.0, "edges": 0, "differ": 0, "ref_f1": 0.0, "our_f1": 0.0,
              "floor_edges": 0, "floor_differ": 0}
    count = 0
    torch.set_num_threads(1)
    with threadpool_limits(limits=1, user_api="blas"):
        for family in BENCHMARK_FAMILIES:
            for index in range(per_family):
                key = (InstanceKey(family, "dev", index) if n is None
                       else InstanceKey(family, "dev", index, n=n))
                instance = generate_instance(key)
                x, truth = np.asarray(instance.X), instance.record.dag
                start = time.perf_counter()
                with torch.random.fork_rng(devices=[]):
                    reference_raw, reference_evals = reference_notears_mlp(
                        x, expm=scipy.linalg.expm)
                reference_seconds = time.perf_counter() - start
                start = time.perf_counter()
                ours = notears_mlp(x)
                our_seconds = time.perf_counter() - start
                edges = int(((ours.raw_weights >= 0.3) != (reference_raw >= 0.3)).sum())
                difference = float(np.abs(ours.raw_weights - reference_raw).max())
                reference_f1 = f1(reference_raw, instance.names, truth)
                our_f1 = f1(ours.raw_weights, instance.names, truth)
                floor = ""
                if noise_floor:  # rounding alone: the reference with another exponential
                    with torch.random.fork_rng(devices=[]):
                        floor_raw, _ = reference_notears_mlp(x, expm=expm_nonnegative)
                    floor_edges = int(((floor_raw >= 0.3) != (reference_raw >= 0.3)).sum())
                    totals["floor_edges"] += floor_edges
                    totals["floor_differ"] += int(floor_edges > 0)
                    floor = (f"{float(np.abs(floor_raw - reference_raw).max()):>12.2e}"
                             f"{floor_edges:>13d}")
                print(f"{family + '/dev/' + str(index):<18}{reference_seconds:>8.2f}"
                      f"{our_seconds:>8.2f}{reference_seconds / our_seconds:>6.2f}×"
                      f"{reference_evals:>10d}{ours.n_evaluations:>10d}{difference:>11.2e}"
                      f"{edges:>8d}{reference_f1:>8.3f}{our_f1:>8.3f}{floor}", flush=True)
                count += 1
                totals["ref"] += reference_seconds
                totals["ours"] += our_seconds
                totals["edges"] += edges
                totals["differ"] += int(edges > 0)
                totals["ref_f1"] += reference_f1
                totals["our_f1"] += our_f1
    print(f"{count} instances: reference {totals['ref']:.1f} s, notears_mlp {totals['ours']:.1f} s "
          f"({totals['ref'] / totals['ours']:.2f}×); thresholded graphs differ on "
          f"{totals['differ']} ({totals['edges']} edges in all); mean F1 reference "
          f"{totals['ref_f1'] / count:.3f}, notears_mlp {totals['our_f1'] / count:.3f}")
    if noise_floor:
        print(f"noise floor: the reference with expm_nonnegative differs from the reference on "
              f"{totals['floor_differ']} ({totals['floor_edges']} edges in all)")


def time_only(instances: list[str], n: int | None) -> None:
    """``notears_mlp`` alone on the named dev instances ("family/index"), one thread."""
    from heuresis_env.generation.instances import InstanceKey, generate_instance

    torch.set_num_threads(1)
    with threadpool_limits(limits=1, user_api="blas"):
        notears_mlp(np.random.default_rng(0).normal(size=(50, 4)), max_iter=1,
                    max_inner_iter=5)  # imports and compiled code loaded before timing
        for name in instances:
            family, index = name.split("/")
            key = InstanceKey(family, "dev", int(index), n=n)
            x = np.asarray(generate_instance(key).X)
            start = time.perf_counter()
            result = notears_mlp(x)
            seconds = time.perf_counter() - start
            print(f"{name:<12} n = {x.shape[0]:<5} {seconds:7.2f} s {result.n_evaluations:7d} "
                  f"evaluations {1e3 * seconds / result.n_evaluations:7.3f} ms/evaluation",
                  flush=True)


def lbfgsb_drivers(instances: list[str], n: int | None, repeats: int) -> None:
    """NOTEARS-MLP and NOTEARS linear with L-BFGS-B driven two ways, in the same run:
    :func:`~heuresis_env.discovery.lbfgsb.minimize_lbfgsb`'s direct loop around SciPy's
    private ``setulb``, and SciPy's public ``scipy.optimize.minimize(method="L-BFGS-B")``
    (``direct=False``). Runs alternate, the minimum of ``repeats`` counts; prints seconds,
    evaluations, the public/direct ratio, and whether the results are the same bit for bit."""
    import functools

    import heuresis_env.discovery.notears as notears_module
    from heuresis_env.discovery.lbfgsb import minimize_lbfgsb
    from heuresis_env.generation.instances import InstanceKey, generate_instance

    drivers = {"direct": functools.partial(minimize_lbfgsb, direct=True),
               "public": functools.partial(minimize_lbfgsb, direct=False)}
    totals = {name: 0.0 for name in drivers}
    torch.set_num_threads(1)
    print(f"{'instance':<10}{'method':<13}{'direct s':>9}{'public s':>9}{'evals':>8}"
          f"{'public/direct':>15}  same result")
    with threadpool_limits(limits=1, user_api="blas"):
        notears_mlp(np.random.default_rng(0).normal(size=(50, 4)), max_iter=1,
                    max_inner_iter=5)  # imports and compiled code loaded before timing
        for name in instances:
            family, index = name.split("/")
            x = np.asarray(generate_instance(InstanceKey(family, "dev", int(index), n=n)).X)
            for method, run in (("notears-mlp", notears_mlp),
                                ("notears", notears_module.notears_linear)):
                seconds = {driver: math.inf for driver in drivers}
                results = {}
                for _ in range(repeats):
                    for driver, minimize in drivers.items():
                        original = notears_module.minimize_lbfgsb
                        notears_module.minimize_lbfgsb = minimize
                        try:
                            start = time.perf_counter()
                            results[driver] = run(x)
                            elapsed = time.perf_counter() - start
                        finally:
                            notears_module.minimize_lbfgsb = original
                        seconds[driver] = min(seconds[driver], elapsed)
                for driver in drivers:
                    totals[driver] += seconds[driver]
                same = (np.array_equal(results["direct"].raw_weights,
                                       results["public"].raw_weights)
                        and results["direct"].n_evaluations == results["public"].n_evaluations)
                print(f"{name:<10}{method:<13}{seconds['direct']:>9.2f}{seconds['public']:>9.2f}"
                      f"{results['direct'].n_evaluations:>8d}"
                      f"{seconds['public'] / seconds['direct']:>14.2f}×  {same}", flush=True)
    print(f"total: direct {totals['direct']:.2f} s, public {totals['public']:.2f} s, public is "
          f"{totals['public'] / totals['direct']:.2f}× the direct driver's time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="anm")
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1, help="runs per implementation (min)")
    parser.add_argument("--noise-floor", action="store_true",
                        help="also run the reference with scipy.linalg.expm (with --per-family: "
                             "the reference again with expm_nonnegative)")
    parser.add_argument("--per-family", type=int, default=0,
                        help="compare with the reference code on this many dev instances a family")
    parser.add_argument("--n", type=int, default=None,
                        help="rows per instance (--per-family, --time)")
    parser.add_argument("--time", metavar="FAMILY/INDEX,…", default=None,
                        help="only time notears_mlp on these dev instances (e.g. anm/0,lg/1): "
                             "seconds, evaluations, ms per evaluation; run it in two checkouts "
                             "to compare them")
    parser.add_argument("--lbfgsb", metavar="FAMILY/INDEX,…", default=None,
                        help="time NOTEARS-MLP and NOTEARS with the direct L-BFGS-B driver and "
                             "with scipy.optimize.minimize on these dev instances (e.g. "
                             "anm/0,lg/0), in the same run")
    args = parser.parse_args()
    if args.lbfgsb:
        lbfgsb_drivers(args.lbfgsb.split(","), args.n, args.repeats)
        return
    if args.per_family:
        agreement(args.per_family, args.n, args.noise_floor)
        return
    if args.time:
        time_only(args.time.split(","), args.n)
        return
    from heuresis_env.generation.instances import InstanceKey, generate_instance

    x = np.asarray(generate_instance(InstanceKey(args.family, "dev", args.index)).X)
    print(f"instance {args.family}/dev/{args.index}: n = {x.shape[0]}, d = {x.shape[1]}")

    seconds: dict[str, float] = {}
    raw: dict[str, np.ndarray] = {}
    evaluations: dict[str, int] = {}
    torch_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(limits=1, user_api="blas"):
        names = ["reference", "torch", "numpy"] + (["scipy"] if args.noise_floor else [])
        for _ in range(args.repeats):
            for name in names:
                start = time.perf_counter()
                if name in ("reference", "scipy"):
                    expm = scipy.linalg.expm if name == "scipy" else expm_nonnegative
                    with torch.random.fork_rng(devices=[]):
                        raw[name], evaluations[name] = reference_notears_mlp(x, expm=expm)
                else:
                    result = notears_mlp(x, engine=name)
                    raw[name], evaluations[name] = result.raw_weights, result.n_evaluations
                elapsed = time.perf_counter() - start
                seconds[name] = min(seconds.get(name, math.inf), elapsed)
    torch.set_num_threads(torch_threads)

    print(f"{'implementation':<28}{'s/run':>8}{'evals':>8}{'ms/eval':>9}{'speed-up':>10}"
          f"{'max|Δraw|':>11}{'Δedges':>8}")
    reference_edges = raw["reference"] >= 0.3
    labels = {"reference": "reference-style torch", "torch": "notears_mlp engine=torch",
              "numpy": "notears_mlp engine=numpy", "scipy": "reference, scipy expm"}
    for name in names:
        per_eval = 1e3 * seconds[name] / evaluations[name]
        difference = float(np.abs(raw[name] - raw["reference"]).max())
        edges = int(((raw[name] >= 0.3) != reference_edges).sum())
        print(f"{labels[name]:<28}{seconds[name]:>8.2f}{evaluations[name]:>8d}{per_eval:>9.3f}"
              f"{seconds['reference'] / seconds[name]:>9.2f}×{difference:>11.2e}{edges:>8d}")
    print(f"engine=numpy vs engine=torch: {seconds['torch'] / seconds['numpy']:.2f}× per run, "
          f"{(seconds['torch'] / evaluations['torch']) / (seconds['numpy'] / evaluations['numpy']):.2f}"
          "× per evaluation")


if __name__ == "__main__":
    main()
