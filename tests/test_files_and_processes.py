"""The indented JSON writer (the viewer's text of tool outputs) and the forked call (the demo's
report beside its viewer)."""

import json
import math
import os
import random
from pathlib import Path

import numpy as np
import pytest

from heuresis_env.errors import HeuresisError
from heuresis_env.files import (
    atomic_write_bytes,
    json_compact,
    json_indented,
    json_indented_head,
    json_safe,
)
from heuresis_env.threads import ForkedCall, can_fork


def _random_value(rng: random.Random, depth: int = 0):
    leaves = [0, -7, 10**30, 0.1, -0.0, 1e300, 5e-324, math.nan, math.inf, -math.inf, "",
              "a\nb\"c\\", "é☃\u2028", "</script>", True, False, None, (1, 2.5), ("x",),
              np.float64(1.5), np.int64(-3), np.bool_(True), np.float32(0.1),
              np.array([[1.0, np.nan], [2.0, 3.0]]), np.arange(3)]
    roll = rng.random()
    if depth > 4 or roll < 0.45:
        return rng.choice(leaves)
    if roll < 0.75:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(0, 5))]
    keys = ["k", "é", 'a"b', "1", "", "z\n"]
    return {rng.choice(keys) + str(i): _random_value(rng, depth + 1)
            for i in range(rng.randrange(0, 5))}


@pytest.mark.parametrize("indent", [0, 1, 2, 4])
def test_json_indented_writes_what_the_standard_library_writes(indent):
    rng = random.Random(indent)
    for _ in range(3000):
        value = _random_value(rng)
        assert json_indented(value, indent) == json.dumps(json_safe(value), indent=indent)


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_json_compact_writes_what_json_safe_then_dumps_writes(ensure_ascii):
    rng = random.Random(7 + ensure_ascii)
    for _ in range(3000):
        value = _random_value(rng)
        assert json_compact(value, ensure_ascii=ensure_ascii) == json.dumps(
            json_safe(value), separators=(",", ":"), ensure_ascii=ensure_ascii)


def test_json_compact_falls_back_for_keys_and_objects_as_before():
    marker = object()
    cases = [{(1, 2): "tuple key"}, {"deep": [{"nan": float("nan")}, np.float32("inf")]},
             {"object": marker, "array": np.array([1.0, np.inf])}]
    for value in cases:
        assert json_compact(value, default=repr) == json.dumps(
            json_safe(value), separators=(",", ":"), default=repr)
    with pytest.raises(TypeError):  # no default: an object is not JSON, as before
        json_compact({"object": marker})
    # keys that are not strings: the encoder's spelling (documented), still strict JSON
    assert json.loads(json_compact({True: 1, None: 2, 3: 3})) == {"true": 1, "null": 2, "3": 3}


def test_json_indented_head_is_the_head_of_the_whole_text():
    rng = random.Random(11)
    for _ in range(2000):
        value = _random_value(rng)
        whole = json_indented(value)
        for limit in (0, 1, 7, 40, len(whole) - 1, len(whole), len(whole) + 5):
            if limit < 0:
                continue
            head, complete = json_indented_head(value, limit)
            assert head == whole[:limit]
            assert complete == (len(whole) <= limit)
    unusual = {1: "int key", "x": [1.5] * 50}
    head, complete = json_indented_head(unusual, 30)
    assert (head, complete) == (json.dumps(json_safe(unusual), indent=1)[:30], False)


def test_json_indented_leaves_unusual_values_to_the_standard_library():
    class Name(str):
        pass

    cases = [{1: "int key", "1": "str key"},  # json_safe's str(k) merges them
             {"nested": {2.5: "float key"}},
             {"subclass": Name("x")}, [{"ordered": __import__("collections").OrderedDict(a=1)}]]
    for value in cases:
        assert json_indented(value) == json.dumps(json_safe(value), indent=1)
    with pytest.raises(TypeError):  # what json.dumps raises for an object
        json_indented({"object": object()})


def _double(x):
    return 2 * x


def _fails(message):
    raise HeuresisError(message)


def _pid():
    return os.getpid()


class _Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("cannot pickle")


def _fails_unpicklably():
    raise _Unpicklable("a custom failure")


def test_a_forked_call_returns_its_value_and_raises_its_error():
    assert ForkedCall(_double, 21).result() == 42
    with pytest.raises(HeuresisError, match="the reason"):
        ForkedCall(_fails, "the reason").result()
    # an exception that cannot travel back: its traceback's text does
    with pytest.raises(RuntimeError, match="_Unpicklable: a custom failure"):
        ForkedCall(_fails_unpicklably).result()


@pytest.mark.skipif(not can_fork(), reason="forking is not safe in this process")
def test_a_forked_call_runs_in_another_process_beside_this_one():
    assert ForkedCall(_pid).result() != os.getpid()
    calls = [ForkedCall(_double, k) for k in range(4)]  # all running at once
    assert [call.result() for call in calls] == [0, 2, 4, 6]


def _nested(value):
    return ForkedCall(_double, value).result(), os.getpid()


def _sleep_then_write(path):
    import time

    time.sleep(5)
    Path(path).write_text("not cancelled")


@pytest.mark.skipif(not can_fork(), reason="forking is not safe in this process")
def test_a_forked_call_may_fork_in_turn():
    """``heuresis demo`` writes its report in a forked call, and the report computes Table 4
    in another one."""
    value, pid = ForkedCall(_nested, 5).result()
    assert value == 10 and pid != os.getpid()


@pytest.mark.skipif(not can_fork(), reason="forking is not safe in this process")
def test_a_cancelled_forked_call_ends_its_process(tmp_path):
    import signal

    marker = tmp_path / "marker"
    # a SIGTERM handler left in this process (as a CLI test can leave one) must not keep the
    # forked call alive past cancel()
    previous = signal.signal(signal.SIGTERM, lambda number, frame: None)
    try:
        call = ForkedCall(_sleep_then_write, marker)
        process = call._process
        call.cancel()
        assert not process.is_alive() and process.exitcode is not None
        with pytest.raises(RuntimeError, match="cancelled"):
            call.result()
        dropped = ForkedCall(_sleep_then_write, marker)  # dropped without asking its result
        process = dropped._process
        del dropped
        assert not process.is_alive()
        assert not marker.exists()
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_atomic_write_makes_missing_folders_and_replaces_whole_files(tmp_path):
    target = tmp_path / "a" / "b" / "file.txt"  # folders made on the first write
    atomic_write_bytes(target, b"first")
    atomic_write_bytes(target, b"second", durable=True)  # an existing folder: replaced
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.txt"]  # no temp left
    umask = os.umask(0o022)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
