"""The trace viewer on a run of 1,000 episodes against the same viewer on 10 of them.

Writes a real run with ``heuresis evaluate`` (policy ``pc-fisherz``: run PC, load its output,
submit; d=10, n=200; resumed when ``--out`` already holds it), a copy holding its first 10
episodes, builds both sites and prints the build time, the index page's size, and — in
Debian's chromium, when it is there — the time until the episode table is drawn and the time
to open one episode, with the ratio 1,000 : 10 measured in the same run (an episode's file is
loaded only when it is opened, so opening one should not grow with the run). Usage::

    python benchmarks/bench_viewer.py [--episodes 1000] [--workers 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import math
import shutil
import tempfile
import time
from pathlib import Path

from heuresis_env.evaluation import evaluate
from heuresis_env.evaluation.run_format import CONFIG_NAME, RESULTS_NAME, TRACES_DIR
from heuresis_env.generation.families import available_families
from heuresis_env.policy import EpisodeSettings
from heuresis_env.viewer import build_site

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def first_episodes(run: Path, count: int, out: Path) -> Path:
    """A copy of ``run`` with only its first ``count`` result lines (and their traces)."""
    shutil.rmtree(out, ignore_errors=True)
    (out / TRACES_DIR).mkdir(parents=True)
    shutil.copyfile(run / CONFIG_NAME, out / CONFIG_NAME)
    lines = (run / RESULTS_NAME).read_text().splitlines(keepends=True)[:count]
    (out / RESULTS_NAME).write_text("".join(lines))
    for trace in sorted((run / TRACES_DIR).iterdir()):
        shutil.copyfile(trace, out / TRACES_DIR / trace.name)
    return out


def browser_times(index: Path, repeats: int = 3) -> tuple[float, float] | None:
    """Median seconds until the episode table is drawn, and to open the first episode."""
    if not Path(CHROMIUM).is_file():
        return None
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="bench-viewer-")
    table, episode = [], []
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        for _ in range(repeats):
            page = context.new_page()
            started = time.perf_counter()
            page.goto(index.as_uri())
            page.wait_for_selector("#episodes tbody tr")
            table.append(time.perf_counter() - started)
            started = time.perf_counter()
            page.locator("#episodes tbody tr a").first.click()
            page.wait_for_selector("#graph-working svg.graph")
            episode.append(time.perf_counter() - started)
            page.close()
        context.close()
    shutil.rmtree(profile, ignore_errors=True)
    return sorted(table)[len(table) // 2], sorted(episode)[len(episode) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "bench-viewer")
    args = parser.parse_args()

    families = available_families()
    repeats = math.ceil(args.episodes / (100 * len(families)))
    count = math.ceil(args.episodes / (repeats * len(families)))
    started = time.perf_counter()
    run = evaluate("pc-fisherz", families=families, split="dev", count=count, repeats=repeats,
                   settings=EpisodeSettings(max_steps=10, max_seconds=600.0),
                   workers=args.workers, out_dir=args.out / "run", d=10, n=200,
                   progress=False).out_dir
    print(f"run: {count} instances × {len(families)} families × {repeats} repeats in "
          f"{time.perf_counter() - started:.0f} s ({run})")
    small = first_episodes(run, 10, args.out / "run-10")

    rows = []
    for label, run_dir in (("10", small), (str(args.episodes), run)):
        started = time.perf_counter()
        site = build_site([run_dir], args.out / f"site-{label}")
        seconds = time.perf_counter() - started
        times = browser_times(site.index_path)
        rows.append((label, site, seconds, times))
        shown = "" if times is None else (f", table drawn in {times[0] * 1000:.0f} ms, an "
                                          f"episode opened in {times[1] * 1000:.0f} ms")
        print(f"{site.n_episodes:5d} episodes: built in {seconds:.2f} s "
              f"({1000 * seconds / site.n_episodes:.1f} ms per episode), index.html "
              f"{site.index_bytes / 1024:.0f} KiB{shown}")
    (_, small_site, small_build, small_times), (_, big_site, big_build, big_times) = rows
    factor = big_site.n_episodes / small_site.n_episodes
    print(f"ratios {big_site.n_episodes}:{small_site.n_episodes} episodes (×{factor:.0f}): "
          f"build ×{big_build / small_build:.1f}, index size "
          f"×{big_site.index_bytes / small_site.index_bytes:.1f}" + (
              "" if big_times is None or small_times is None else
              f", table ×{big_times[0] / small_times[0]:.2f}, opening an episode "
              f"×{big_times[1] / small_times[1]:.2f}"))
    if big_times is None:
        print(f"(no browser timings: {CHROMIUM} is not installed)")


if __name__ == "__main__":
    main()
