"""What the README's `make` installs: every optional feature the documentation offers."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_make_installs_every_optional_feature():
    """`make install` installs every extra of setup.cfg (but the umbrella `all`), so that no
    documented method — estimate_effect(method="dml") needs `effects` — fails after it; an
    extra kept out of EXTRAS (the local language models, `make local-llm`) is installed by a
    target `make test` runs, so the suite tests it too."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    extras = set(config["options.extras_require"]) - {"all"}
    makefile = (ROOT / "Makefile").read_text()
    match = re.search(r"^EXTRAS \?= *(\S+)", makefile, re.MULTILINE)
    assert match, "the Makefile names the extras it installs in EXTRAS"
    installed = set(match.group(1).split(","))
    test_prerequisites = re.search(r"^test: (.*)$", makefile, re.MULTILINE).group(1).split()
    for target in test_prerequisites:  # `make local-llm`: pip install -e '.[local-llm]'
        recipe = re.search(rf"^\$\(VENV\)/\.{re.escape(target)}:.*\n((?:\t.*\n)+)", makefile,
                           re.MULTILINE)
        if recipe:
            installed |= set(re.findall(r"-e '\.\[([\w-]+)\]'", recipe.group(1)))
    assert extras <= installed, f"make test does not install {sorted(extras - installed)}"
    assert "-e '.[$(EXTRAS)]'" in makefile


def _fake_apt(tmp_path: Path, plan: str) -> tuple[dict, Path]:
    """A PATH whose ``apt-get`` records its arguments (and prints ``plan`` when asked to
    simulate) and whose ``id`` says root: the install script run for real, apt stubbed."""
    import os
    import stat

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "apt-calls"
    (tmp_path / "plan").write_text(plan)
    scripts = {
        "apt-get": f'#!/bin/sh\necho "$*" >> "{calls}"\ncase " $* " in *" -s "*) '
                   f'cat "{tmp_path / "plan"}";; *) echo "apt chatter";; esac\n',
        "id": "#!/bin/sh\necho 0\n",
    }
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(stat.S_IRWXU)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}, calls


def test_make_installs_chromium_quietly_without_recommends_or_upgrades(tmp_path):
    """`make test` as root installs chromium with --no-install-recommends and --no-upgrade,
    quietly (one printed line, apt's output in a log), and refuses a plan that would upgrade
    an installed package (issue 42)."""
    import subprocess

    makefile = (ROOT / "Makefile").read_text()
    assert 'sh scripts/install_chromium.sh "$(CHROMIUM)"' in makefile
    script = str(ROOT / "scripts" / "install_chromium.sh")
    missing = str(tmp_path / "no chromium here")
    env, calls = _fake_apt(tmp_path, "Inst libfoo (1.0 Debian [amd64])\n"
                                     "Inst chromium (150 Debian [amd64])\nConf chromium\n")
    done = subprocess.run(["sh", script, missing, str(tmp_path / "log")], env=env,
                          capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [
        "installing Debian's chromium for the browser tests (2 packages, no recommends, no "
        f"upgrades; log: {tmp_path / 'log'})"] and not done.stderr
    update, simulate, install = calls.read_text().splitlines()
    assert update == "update -qq"
    for options in (simulate, install):
        assert {"-y", "-qq", "--no-install-recommends", "--no-upgrade"} <= set(options.split())
    assert simulate.split()[0] == "-s" and install.split()[0] == "install"
    assert "apt chatter" in (tmp_path / "log").read_text()

    calls.unlink()
    (tmp_path / "upgrade").mkdir()
    env, calls = _fake_apt(tmp_path / "upgrade", "Inst libc6 [2.36-9] (2.36-9+deb12u9 Debian "
                                                 "[amd64])\nInst chromium (150 Debian [amd64])\n")
    done = subprocess.run(["sh", script, missing, str(tmp_path / "log")], env=env,
                          capture_output=True, text=True, check=True)
    assert "would upgrade installed packages (libc6)" in done.stdout
    assert not any(line.startswith("install") for line in calls.read_text().splitlines())


def test_make_test_runs_the_whole_suite_in_parallel_and_ci_runs_make_test():
    """`make test` runs every test — slow and browser tests included — in pytest-xdist
    workers (issue 42), distributed test by test (a crashed worker is replaced; loadgroup and
    loadscope can hang then), and `.ci/run` calls exactly the README's test command."""
    makefile = (ROOT / "Makefile").read_text()
    workers = re.search(r"^TEST_WORKERS \?= *(\S+)", makefile, re.MULTILINE)
    assert workers and (workers.group(1) == "auto" or int(workers.group(1)) >= 2)
    pytest_line = re.search(r"^PYTEST = (.+)$", makefile, re.MULTILINE)
    assert pytest_line and "-n $(TEST_WORKERS)" in pytest_line.group(1)
    assert "--dist load" in pytest_line.group(1) and " -m \"" not in pytest_line.group(1)
    assert "--dist loadgroup" not in pytest_line.group(1)
    recipe = re.search(r"^test: .*\n\t(.+)$", makefile, re.MULTILINE)
    assert recipe and recipe.group(1).strip() == "$(PYTEST)"
    # the adversarial suite's rerun as a normal user runs in the same workers
    rerun = re.search(r"^UNPRIVILEGED_TESTS = (.+)$", makefile, re.MULTILINE)
    assert rerun and "-n $(TEST_WORKERS) --dist load" in rerun.group(1)
    assert makefile.count("$(UNPRIVILEGED_TESTS)") == 2  # as root and as a normal user
    readme = (ROOT / "README.md").read_text()
    assert "make test   #" in readme.split("\n\n")[1]
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == "make test"


@pytest.mark.machine_wide("self-test")
def test_a_machine_wide_test_holds_its_lock_while_it_runs():
    """A test marked ``machine_wide(NAME)`` runs holding the lock another worker's test of
    that name would wait for (tests/conftest.py)."""
    import subprocess
    import sys
    import tempfile

    path = Path(tempfile.gettempdir()) / "heuresis-tests-self-test.lock"
    probe = ("import sys, filelock\n"
             "try:\n    filelock.FileLock(sys.argv[1], timeout=0).acquire()\n"
             "except filelock.Timeout:\n    print('held')\nelse:\n    print('free')\n")
    done = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == "held"


def test_under_xdist_the_slow_tests_head_each_workers_first_block(monkeypatch):
    """tests/conftest.py's ordering (issue 42): with two workers, the slow tests start the two
    workers' first blocks, the longest first, each to the worker with less slow work so far;
    tests holding one machine-wide resource, or sharing module fixtures, on one worker (the
    latter in a row); a slow test whose module fixture quick tests use too stays in place;
    the same tests run, the others in their order."""
    from types import SimpleNamespace

    from tests import conftest

    def item(nodeid, slow=False, resource=None, module_fixture=None):
        marks = {"slow": slow, "machine_wide": resource is not None}
        fixtures = {"tmp_path": [SimpleNamespace(scope="function")]}
        if module_fixture:
            fixtures[module_fixture] = [SimpleNamespace(scope="module")]
        return SimpleNamespace(
            nodeid=nodeid, _fixtureinfo=SimpleNamespace(name2fixturedefs=fixtures),
            get_closest_marker=lambda name: (SimpleNamespace(args=(resource,))
                                             if marks.get(name) else None))

    monkeypatch.setattr(conftest, "SLOW_SECONDS", {
        "tests/test_examples.py::": 480, "tests/test_rl.py::": 300,
        "tests/test_models.py::test_long": 100, "tests/test_models.py::test_short": 10})
    monkeypatch.setattr(conftest, "DEFAULT_SLOW_SECONDS", 30)
    quick = [item(f"tests/test_a.py::test_{k}") for k in range(60)]
    ray = [item(f"tests/test_r.py::test_ray_{k}", slow=True, resource="ray") for k in range(2)]
    uses_run = item("tests/test_m.py::test_quick_on_the_run", module_fixture="run")
    stays = item("tests/test_m.py::test_slow_on_the_run", slow=True, module_fixture="run")
    model = [item(f"tests/test_models.py::test_{k}", slow=True, module_fixture="model")
             for k in ("short", "long")]
    rl = item("tests/test_rl.py::test_train", slow=True)
    demo = item("tests/test_demo.py::test_demo", slow=True)
    example = item("tests/test_examples.py::test_train", slow=True)
    items = [*quick[:20], *ray, uses_run, stays, *model, rl, *quick[20:], demo, example]
    before = list(items)
    config = SimpleNamespace(getoption=lambda name, default=None: {
        "maxschedchunk": None}.get(name, default))
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    conftest.pytest_collection_modifyitems(config, items)
    assert sorted(map(id, items)) == sorted(map(id, before))  # the same tests
    chunk = len(items) // 2 // 4  # xdist's first block per worker: 9 here
    first, second = items[:chunk], items[chunk:2 * chunk]
    # 480 s on one worker; 300 + 100 + 10 + 30 (demo) + 30 + 30 (the two ray tests) beside it
    assert first[0] is example and first[1] is not rl
    assert second[:6] == [rl, model[1], model[0], *ray, demo]  # the module's two in a row
    moved = (example, demo, rl, *ray, *model)
    assert stays not in first + second  # its module's quick test uses its fixture: in place
    assert [t for t in items if t not in moved] == [t for t in before if t not in moved]
    # without xdist (or with one worker) nothing moves
    for env in ("0", "1"):
        items = list(before)
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", env)
        conftest.pytest_collection_modifyitems(config, items)
        assert items == before
