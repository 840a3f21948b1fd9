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
    assert header.split() == ["family", "count", "edges", "varsort(raw)", "varsort", "R2-sort",
                              "seconds", "directory"]
    row = lines[lines.index(header) + 1]
    assert row.startswith("lg  ") and len(row.split()) == 8
