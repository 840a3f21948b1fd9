"""The one console table helper every command's table goes through."""

from __future__ import annotations

import pytest

from heuresis_env.console import text_table


def test_columns_are_as_wide_as_their_widest_cell():
    text = text_table(["family", "episodes", "F1", "note"],
                      [["lg", 12, "0.857", ""], ["gauntlet", 3, "-", "no ground truth"]],
                      align="<>><", indent="  ")
    assert text.splitlines() == [
        "  family    episodes     F1  note",
        "  lg              12  0.857",
        "  gauntlet         3      -  no ground truth",
    ]
    with pytest.raises(ValueError, match="one of '<' or '>' per column"):
        text_table(["a", "b"], [], align="<")
    with pytest.raises(ValueError, match="a row of 1 cells for 2 columns"):
        text_table(["a", "b"], [["x"]])


def test_the_commands_print_through_it(tmp_path, capsys):
    from heuresis_env import cli

    assert cli.main(["generate", "--family", "lg", "--split", "dev", "--count", "1", "--d", "4",
                     "--n", "50", "--out", str(tmp_path), "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("family"))
    assert header.split() == ["family", "d", "n", "graph", "count", "edges", "varsort(raw)",
                              "varsort", "R2-sort", "seconds", "directory"]
    row = lines[lines.index(header) + 1]
    assert row.startswith("lg  ") and len(row.split()) == 11
    # the sizes as resolved, never the options' None (issue 42): asked, then left to defaults
    assert row.split()[1:4] == ["4", "50", "er"]
    assert cli.main(["generate", "--family", "lg,bnlearn-asia", "--split", "dev", "--count",
                     "1", "--out", str(tmp_path / "defaults"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "None" not in out
    rows = {line.split()[0]: line.split()[1:4] for line in out.splitlines()
            if line.startswith(("lg ", "bnlearn-asia "))}
    assert rows == {"lg": ["10", "600", "er"], "bnlearn-asia": ["8", "600", "fixed"]}
