"""What the README's `make` installs: every optional feature the documentation offers."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_make_installs_every_optional_feature():
    """`make install` installs every extra of setup.cfg (but the umbrella `all`), so that no
    documented method — estimate_effect(method="dml") needs `effects` — fails after it."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    extras = set(config["options.extras_require"]) - {"all"}
    makefile = (ROOT / "Makefile").read_text()
    match = re.search(r"^EXTRAS \?= *(\S+)", makefile, re.MULTILINE)
    assert match, "the Makefile names the extras it installs in EXTRAS"
    installed = set(match.group(1).split(","))
    assert extras <= installed, f"make does not install {sorted(extras - installed)}"
    assert "-e '.[$(EXTRAS)]'" in makefile
