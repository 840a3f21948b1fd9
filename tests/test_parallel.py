"""The one parallel map (``heuresis_env.threads.parallel_map``), on real worker processes."""

from __future__ import annotations

import os
import pickle
import threading

import pytest

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.threads import can_fork, parallel_map, start_method

#: set by a test before a map: a forked worker sees the new value, a spawned one this one
MARK = "as imported"


def _square(job: int) -> int:
    return job * job


def _where(job: int) -> tuple[int, int, str, str]:
    """The job, the process that ran it, what it saw of MARK, its BLAS thread variable."""
    return job, os.getpid(), MARK, os.environ.get("OMP_NUM_THREADS", "")


def _fail_on_three(job: tuple[int, str]) -> int:
    number, _ = job
    if number == 3:
        raise HeuresisError(f"job {number} refused")
    return number


@pytest.fixture
def marked():
    global MARK
    MARK = "set by the parent"
    yield
    MARK = "as imported"


@pytest.fixture
def thread_running():
    """A non-daemon thread alive in this process: forking is then not safe."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def test_results_equal_the_serial_map_in_order_or_as_finished():
    jobs = list(range(12))
    serial = [_square(job) for job in jobs]
    assert list(parallel_map(_square, jobs, 1)) == serial
    assert list(parallel_map(_square, jobs, 3)) == serial
    assert sorted(parallel_map(_square, jobs, 3, ordered=False)) == serial
    assert list(parallel_map(_square, [], 3)) == []


def test_one_worker_or_one_job_runs_in_this_process(marked):
    for workers, jobs in ((1, [1, 2, 3]), (4, [5])):
        for _, pid, mark, _ in parallel_map(_where, jobs, workers):
            assert (pid, mark) == (os.getpid(), "set by the parent")


@pytest.mark.skipif(not can_fork(), reason="forking is not safe in this process")
def test_workers_are_forked_where_can_fork_says_it_is_safe(marked):
    assert start_method() == "fork"
    seen = list(parallel_map(_where, range(4), 2, threads=3))
    assert [job for job, *_ in seen] == [0, 1, 2, 3]
    assert all(pid != os.getpid() for _, pid, _, _ in seen)
    assert {mark for _, _, mark, _ in seen} == {"set by the parent"}  # inherited: a fork
    assert {threads for *_, threads in seen} == {"3"}  # each worker limited its libraries


def test_workers_are_spawned_while_another_thread_runs(marked, thread_running):
    assert not can_fork() and start_method() == "spawn"
    seen = list(parallel_map(_where, range(4), 2, threads=2))
    assert all(pid != os.getpid() for _, pid, _, _ in seen)
    assert {mark for _, _, mark, _ in seen} == {"as imported"}  # a fresh interpreter
    assert {threads for *_, threads in seen} == {"2"}


def test_fork_only_runs_here_when_forking_is_not_safe(marked, thread_running):
    seen = list(parallel_map(_where, range(4), 2, fork_only=True))
    assert {(pid, mark) for _, pid, mark, _ in seen} == {(os.getpid(), "set by the parent")}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failure_is_raised_as_itself_naming_its_job(workers):
    jobs = [(number, "a-secret-salt") for number in range(6)]
    with pytest.raises(HeuresisError, match="job 3 refused") as raised:
        list(parallel_map(_fail_on_three, jobs, workers))
    assert raised.value.__notes__ == ["(raised by parallel_map while running job 4 of 6)"]
    with pytest.raises(HeuresisError) as raised:
        list(parallel_map(_fail_on_three, jobs, workers, ordered=False,
                          describe=lambda job: f"number {job[0]}"))
    assert raised.value.__notes__ == ["(raised by parallel_map while running number 3)"]
    assert "a-secret-salt" not in str(raised.value) + "".join(raised.value.__notes__)


class _Unrebuildable(Exception):
    """An exception pickle cannot rebuild (its ``__init__`` does not take its message)."""

    def __init__(self, number: int, reason: str):
        super().__init__(f"job {number}: {reason}")


def _fail_unrebuildable(job: int) -> int:
    if job == 2:
        raise _Unrebuildable(job, "cannot go on")
    return job


def test_an_exception_pickle_cannot_rebuild_comes_back_as_its_text_not_a_broken_pool():
    with pytest.raises(_Unrebuildable):  # in this process: itself
        list(parallel_map(_fail_unrebuildable, range(4), 1))
    with pytest.raises(RuntimeError, match="_Unrebuildable: job 2: cannot go on") as raised:
        list(parallel_map(_fail_unrebuildable, range(4), 2))
    assert raised.value.__notes__ == ["(raised by parallel_map while running job 3 of 4)"]


def _unknown_name(job: int) -> int:
    if job == 1:
        raise UnknownNameError("family", "wlid", ["lg", "wild"])
    return job


def test_an_unknown_name_crosses_a_process_as_itself():
    error = UnknownNameError("family", "wlid", ["lg", "wild"])
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is UnknownNameError and str(copy) == str(error)
    assert (copy.kind, copy.name, copy.known) == ("family", "wlid", ["lg", "wild"])
    with pytest.raises(UnknownNameError, match="Did you mean 'wild'"):
        list(parallel_map(_unknown_name, range(3), 2))
