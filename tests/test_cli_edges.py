"""The command line's rough edges, each a clean one-line error or the expected behaviour:
sizes out of range, a misspelt policy, a refused run that leaves nothing behind, a foreign
folder given to --out."""

from __future__ import annotations

import pytest

from heuresis_env import cli
from heuresis_env.errors import HeuresisError
from heuresis_env.generation.instances import InstanceKey


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    printed = capsys.readouterr()
    return code, printed.out, printed.err


@pytest.mark.parametrize(("args", "message"), [
    (["evaluate", "--policy", "pc-kci", "--family", "lg", "--n", "100000000000"],
     "n must be an integer in 10..1,000,000"),
    (["generate", "--family", "lg", "--split", "dev", "--d", "100000"],
     "d must be an integer in 2..1,000, got 100000"),
    (["demo", "--d", "100000"], "d must be an integer in 2..1,000"),
    (["show", "lg/dev/0", "--d", "900", "--n", "900000"], "is more than 20,000,000 values"),
])
def test_a_size_out_of_range_is_a_one_line_error(args, message, capsys, tmp_path):
    code, out, err = run([*args, "--out", str(tmp_path / "out")] if args[0] != "show"
                         else args, capsys)
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_the_size_limits_are_in_the_key():
    with pytest.raises(HeuresisError, match="2..1,000"):
        InstanceKey("lg", "dev", 0, d=1001)
    assert InstanceKey("lg", "dev", 0, d=1000, n=20_000).d == 1000


def test_a_misspelt_policy_is_named_with_the_closest_match(capsys, tmp_path):
    code, _, err = run(["demo", "--policies", "pc-kcii", "--out", str(tmp_path / "d")], capsys)
    assert code == 2 and "unknown policy 'pc-kcii'. Did you mean 'pc-kci'?" in err
    assert "pip install" not in err
    code, _, err = run(["evaluate", "--policy", "routr", "--family", "lg", "--out",
                        str(tmp_path / "e")], capsys)
    assert code == 2 and "Did you mean 'router'?" in err
    assert not (tmp_path / "d").exists() and not (tmp_path / "e").exists()


def test_a_refused_evaluate_leaves_no_folder_and_a_foreign_folder_is_refused(capsys, tmp_path):
    out = tmp_path / "refused"
    code, _, err = run(["evaluate", "--policy", "bca", "--policy-option",
                        "selection_path=missing.json", "--family", "lg", "--count", "1",
                        "--d", "4", "--n", "100", "--out", str(out)], capsys)
    assert code == 2 and "BCA selection file" in err
    assert not out.exists()  # no folder holding only a lock file
    empty = tmp_path / "empty"
    empty.mkdir()
    run(["evaluate", "--policy", "bca", "--policy-option", "selection_path=missing.json",
         "--family", "lg", "--count", "1", "--d", "4", "--n", "100", "--out", str(empty)],
        capsys)
    assert empty.is_dir() and not any(empty.iterdir())  # the user's folder stays, empty
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    code, _, err = run(["evaluate", "--policy", "pc-kci", "--family", "lg", "--count", "1",
                        "--d", "4", "--n", "100", "--out", str(foreign), "--no-progress"],
                       capsys)
    assert code == 2 and "is a non-empty folder that is not a run directory" in err
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]


def test_baselines_on_a_table_prints_the_discovered_edges(capsys, tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.normal(size=300)
    b = a + rng.normal(size=300)
    c = b + rng.normal(size=300)
    np.savetxt(tmp_path / "d.csv", np.column_stack([a, b, c]), delimiter=",", header="a,b,c",
               comments="")
    code, out, _ = run(["baselines", "--dataset", str(tmp_path / "d.csv"), "--algorithms",
                        "pc-fisherz,ges"], capsys)
    assert code == 0
    edges = out[out.index("Discovered edges:"):]
    assert "  pc-fisherz (2): a --- b, b --- c" in edges and "  ges (2): " in edges
