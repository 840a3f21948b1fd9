"""Deterministic results are served from the disk cache: CI tests of every method (randomized
ones keyed by their seed), the report's proposition simulation; the memo and thread limits."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from heuresis_env.cache import MemoCache, RecordLog, ResultCache
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.studies.deletion_signals import cached_proposition_simulation


def _data(seed: int, n: int = 150) -> np.ndarray:
    rng = np.random.default_rng(seed)
    data = rng.normal(size=(n, 5))
    data[:, 1] += np.sin(data[:, 0])
    data[:, 2] += data[:, 1] ** 2
    return data


@pytest.mark.parametrize(("name", "params"), [
    ("kci", {}),
    ("rcit", {"seed": 3}),
    ("rcot", {"seed": 3}),
    ("dcor", {"seed": 3, "n_permutations": 49}),
])
def test_slow_ci_tests_are_read_back_from_disk_by_a_new_object(name, params):
    data = _data(1)
    cases = [(0, 2, ()), (0, 2, (1,)), (3, 4, (0, 1))]
    first = make_ci_test(name, data, **params)
    expected = [first.test(*case) for case in cases]
    assert first.n_computed == len(cases)
    second = make_ci_test(name, data.copy(), **params)  # another episode, process or run
    assert [second.test(*case) for case in cases] == expected
    assert second.n_computed == 0
    if "seed" in params:  # the seed is part of the key: another seed computes again
        other = make_ci_test(name, data, **{**params, "seed": 4})
        other.test(*cases[0])
        assert other.n_computed == 1


def _append_records(path: str, writer: int, count: int) -> None:
    log = RecordLog(path)
    for i in range(count):  # lines of different lengths, some longer than a pipe buffer
        log.append(f"{writer}:{i}", [writer, i, "x" * ((i * 37) % 5000)])


def test_record_log_keeps_every_line_of_concurrent_writers(tmp_path):
    """Four processes append to one log at once: every record is read back whole."""
    import multiprocessing

    path = str(tmp_path / "ci" / "log.jsonl")
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_append_records, args=(path, w, 300)) for w in range(4)]
    for process in writers:
        process.start()
    for process in writers:
        process.join(60)
        assert process.exitcode == 0
    lines = open(path, encoding="utf-8").read().split("\n")
    assert lines[-1] == "" and len(lines) == 4 * 300 + 1  # no line lost, none merged
    records = RecordLog(path).load()
    assert len(records) == 4 * 300
    assert all(records[f"{w}:{i}"] == [w, i, "x" * ((i * 37) % 5000)]
               for w in range(4) for i in range(300))


def test_record_log_skips_a_torn_line(tmp_path):
    log = RecordLog(tmp_path / "log.jsonl")
    log.append("a", 1)
    with open(log.path, "a", encoding="utf-8") as f:
        f.write('{"k":"b","v":')  # a writer killed mid-line
    assert log.load() == {"a": 1}
    log.append("c", 3)  # appended after the torn line: that line is lost, later ones kept
    log.append("d", 4)
    assert log.load() == {"a": 1, "d": 4}


def test_fisherz_stays_in_memory_only():
    """Fisher-z costs microseconds: reading it from disk would cost more than computing it."""
    test = make_ci_test("fisherz", _data(2))
    assert test._disk is None


def test_proposition_simulation_is_computed_once():
    kwargs = {"n": 80, "noncentralities": (1.0, 0.0), "kept_per_class": 50, "seed": 5}
    store = ResultCache("reports-proposition")
    entries = lambda: sum(1 for _ in store.directory.rglob("*.npz"))  # noqa: E731
    before = entries()
    rows = cached_proposition_simulation(**kwargs)
    assert entries() == before + 1
    again = cached_proposition_simulation(**kwargs)
    assert entries() == before + 1 and again == rows
    assert cached_proposition_simulation(**{**kwargs, "seed": 6}) != rows
    assert entries() == before + 2


def test_memo_cache_byte_budget():
    memo: MemoCache[str] = MemoCache(10, max_bytes=100)
    memo.set("a", "A", 60)
    memo.set("b", "B", 30)
    assert "a" in memo and "b" in memo
    memo.get("a")  # a is now the most recent
    memo.set("c", "C", 30)  # 120 bytes: the least recently used (b) leaves
    assert "b" not in memo and "a" in memo and "c" in memo
    assert memo.set("huge", "H", 101) == "H" and "huge" not in memo
    memo.clear()
    memo.set("d", "D", 100)
    assert len(memo) == 1


def test_limit_threads_sets_blas_and_the_environment_of_children():
    code = textwrap.dedent(
        """
        import os, numpy
        from threadpoolctl import threadpool_info
        from heuresis_env.threads import limit_threads
        count = limit_threads()
        blas = {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}
        print(count, sorted(blas), os.environ["OPENBLAS_NUM_THREADS"])
        """
    )
    env = {**os.environ, "HEURESIS_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout.split()
    assert out == ["1", "[1]", "1"]
