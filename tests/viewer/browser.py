"""A real browser for the page tests: Debian's chromium driven by Playwright's Python package
(``executable_path``, no browser download). ``make test`` installs chromium when it is missing
and the user is root; elsewhere the browser tests are skipped with the reason, except under CI
(``CI`` set), where a missing browser fails them."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("HEURESIS_CHROMIUM", "/usr/bin/chromium")
#: flags for a headless chromium on a machine with no network but the loopback interface
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
#: where the tests also save their screenshots (docs/ when refreshing the README's pictures)
SCREENSHOT_DIR_ENV = "HEURESIS_SCREENSHOT_DIR"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the browser tests (make test installs chromium)")
    pytest.skip(reason)


@contextmanager
def chromium() -> Iterator:
    """A Playwright browser on Debian's chromium with a fresh profile directory."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the browser tests need Playwright's Python package (the dev extra)")
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        _unavailable(f"no chromium at {CHROMIUM}: run `make test` as root (it installs Debian's "
                     "chromium) or `apt-get install chromium`")
    profile = tempfile.mkdtemp(prefix="heuresis-chromium-")
    try:
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                viewport={"width": 1280, "height": 860})
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def save_screenshot(page, name: str, tmp: Path, full_page: bool = False) -> Path:
    """A PNG of the page in ``tmp`` (and in ``$HEURESIS_SCREENSHOT_DIR`` when set)."""
    path = tmp / name
    page.screenshot(path=str(path), full_page=full_page)
    target = os.environ.get(SCREENSHOT_DIR_ENV)
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, Path(target) / name)
    return path
