"""Every Python block of the README and of docs/ runs as written: each is extracted and run as
a script in a fresh interpreter, from an empty temporary folder, so a doc cannot go stale.

A block that cannot run here (it needs a paid model's API key) is marked in the Markdown by an
HTML comment on the line before its opening fence, ``<!-- doctest: skip REASON -->``; the
reason is required and shown as the skip reason. Such marks are rare: a block that is only
slow is written small instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
SKIP = re.compile(r"<!--\s*doctest:\s*skip\b(.*?)-->\s*\Z", re.S)


def python_blocks() -> list:
    """Every ```python block as a pytest parameter ``file:line`` (skipped ones marked)."""
    blocks = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            name = f"{path.relative_to(ROOT)}:{line}"
            before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            skip = SKIP.search(before + "\n")
            marks = []
            if skip is not None:
                reason = skip.group(1).strip()
                assert reason, f"{name}: a doctest skip needs its reason"
                marks.append(pytest.mark.skip(reason=f"{name}: {reason}"))
            blocks.append(pytest.param(match.group(1), id=name, marks=marks))
    return blocks


BLOCKS = python_blocks()


def test_the_docs_have_python_blocks_and_few_skips():
    assert len(BLOCKS) >= 13
    skipped = [b for b in BLOCKS if b.marks]
    assert len(skipped) <= 2, [b.id for b in skipped]


@pytest.mark.slow
@pytest.mark.parametrize("code", BLOCKS)
def test_a_python_block_runs_as_written(code, tmp_path):
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HEURESIS_LLM_BASE_URL")}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (f"the block failed (exit {done.returncode}):\n"
                                  f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
