"""The viewer and the report page in a real browser (Debian's chromium, driven by Playwright):
filter and sort the episodes, open one (its file loads only then), move the step slider, read
the graph (SVG), the evidence and the outcome; the report's headline, folded configuration
and links into the viewer. Every page is served on 127.0.0.1 (and once from file://), and no
request leaves the machine."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from heuresis_env.reports import build_report
from heuresis_env.viewer import build_site
from heuresis_env.viewer.serve import site_server
from tests.viewer.browser import chromium, save_screenshot

EVIDENCE_POLICY = "tests.viewer.viewer_policies:EvidencePolicy"


@pytest.fixture(scope="module")
def pages(viewer_runs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pages")
    runs = list(viewer_runs.values())
    build_site(runs, out / "viewer")
    build_report(runs, out / "report", viewer="../viewer/index.html", n_resamples=200,
                 proposition_kept=200, trace_analysis=False)
    # the bca run is the real policy's: the report re-derives it and uses it as BCA_phi
    assert "UNVERIFIED" not in (out / "report" / "report.md").read_text(encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def base_url(pages):
    server = site_server(pages, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    with chromium() as context:
        yield context


@pytest.fixture
def page(browser, base_url):
    """A new tab that records every request and every script error."""
    tab = browser.new_page()
    tab.requests, tab.errors = [], []
    tab.on("request", lambda request: tab.requests.append(request.url))
    tab.on("pageerror", lambda error: tab.errors.append(str(error)))
    yield tab
    local = [u for u in tab.requests if not u.startswith((base_url, "file://", "data:"))]
    assert local == [], "requests left the machine"
    assert tab.errors == []
    tab.close()


def episode_payload(pages: Path, file: str) -> dict:
    text = (pages / "viewer" / "episodes" / f"{file}.js").read_text()
    return json.loads(re.fullmatch(r'heuresisEpisode\("[^"]+",(.*)\);\n', text, re.S).group(1))


def column(page, index: int) -> list[str]:
    return page.locator(f"#episodes tbody tr td:nth-child({index})").all_inner_texts()


def choose(page, filter_id: str, values: list[str]) -> None:
    """Check exactly ``values`` in a filter's list of checkboxes (none: all), as a user does:
    open the list, click the boxes, close it with Escape."""
    page.click(f"{filter_id} summary")
    for box in page.locator(f"{filter_id} input[type=checkbox]").all():
        if box.is_checked() != (box.get_attribute("value") in values):
            box.click()
    page.keyboard.press("Escape")


def chosen(page, filter_id: str) -> list[str]:
    return [box.get_attribute("value")
            for box in page.locator(f"{filter_id} input[type=checkbox]").all()
            if box.is_checked()]


def no_horizontal_overflow(page) -> None:
    """Nothing wider than the 1280 px window: the page does not scroll sideways and no
    table cell's text runs out of its cell."""
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    spilled = page.evaluate("""() => Array.from(document.querySelectorAll('td, th'))
        .filter(c => c.closest('.table-wrap') === null || c.closest('#runs'))
        .filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent.slice(0, 60))""")
    assert spilled == []


def test_filter_sort_and_open_an_episode(page, base_url, pages, tmp_path):
    page.goto(f"{base_url}/viewer/index.html")
    rows = page.locator("#episodes tbody tr")
    assert rows.count() == 12
    assert page.locator("#episode-count").inner_text() == "12 of 12 episodes"
    save_screenshot(page, "viewer-index.png", tmp_path)

    choose(page, "#filter-family", ["anm"])
    assert rows.count() == 6 and set(column(page, 4)) == {"anm"}
    choose(page, "#filter-policy", [EVIDENCE_POLICY])
    assert rows.count() == 2
    choose(page, "#filter-policy", [])
    choose(page, "#filter-reason", ["submitted"])
    assert rows.count() == 6
    assert "family=anm" in page.url and "reason=submitted" in page.url

    # sort by Δ against BCA_φ, descending then ascending; missing values (bca itself) last
    page.click("#episodes th[data-sort=delta]")
    deltas = [float(x) for x in column(page, 6) if x != "—"]
    assert len(deltas) == 4 and deltas == sorted(deltas, reverse=True)
    page.click("#episodes th[data-sort=delta]")
    deltas = [float(x) for x in column(page, 6) if x != "—"]
    assert deltas == sorted(deltas)
    page.click("#episodes th[data-sort=f1]")
    f1 = [float(x) for x in column(page, 5)]
    assert f1 == sorted(f1, reverse=True)

    # the filters live in the URL: a reload (or a link from the report) restores them
    page.reload()
    assert chosen(page, "#filter-family") == ["anm"] and rows.count() == 6

    assert not [u for u in page.requests if "/episodes/" in u]  # nothing loaded yet
    choose(page, "#filter-family", ["lg"])
    choose(page, "#filter-policy", [EVIDENCE_POLICY])
    page.get_by_role("link", name="lg/dev/0/r0").click()
    page.wait_for_selector("#episode")
    loaded = [u for u in page.requests if "/episodes/" in u]
    assert len(loaded) == 1 and loaded[0].endswith(".js")
    file = loaded[0].rsplit("/", 1)[1][:-3]
    payload = episode_payload(pages, file)

    # the graph is drawn as a graph: an SVG with a node per variable, an element per edge
    working = page.locator("#graph-working svg.graph")
    assert working.locator("g.node").count() == 5
    assert page.locator("#graph-working table").count() == 0
    slider = page.locator("#step-slider")
    assert slider.get_attribute("max") == "9" and slider.input_value() == "9"
    assert working.locator("g.edge").count() == len(payload["final"]) == 2

    slider.fill("3")  # add_edge X1 → X2, citing step 1 explicitly
    assert page.locator("#step-label").inner_text() == "step 3 of 9"
    assert working.locator("g.edge").count() == 1
    assert working.locator("g.edge.changed").get_attribute("data-pair") == "X1|X2"
    assert working.locator("g.edge.changed polygon").count() == 1  # its arrowhead
    evidence = page.locator("#evidence-panel")
    assert "named by the agent" in evidence.inner_text()
    assert evidence.locator("a.step-link").all_inner_texts() == [
        'step 1: ci_test(x="X1", y="X2", method="fisherz")']
    # the evidence's own output: the test's p-value, kept in the trace of this scripted policy
    cited_output = evidence.locator("pre.output").inner_text()
    assert cited_output.startswith("X1 _||_ X2 by fisherz") and "p-value" in cited_output
    assert cited_output == payload["steps"][0]["output"]
    no_horizontal_overflow(page)
    save_screenshot(page, "viewer-episode.png", tmp_path, full_page=True)

    evidence.locator("a.step-link").click()  # the cited call
    assert slider.input_value() == "1" and "step 1 of 9" in page.locator("#step-label").inner_text()
    citing = [s["n"] for s in payload["steps"] if 1 in s.get("evidence", [])]
    assert citing[:2] == [3, 4]  # explicitly, then implicitly (the calls since no edit)
    assert [t.split(":")[0] for t in evidence.locator("a.step-link").all_inner_texts()] == [
        f"step {n}" for n in citing]

    slider.fill("6")  # remove_edge X2 — X3: drawn as a dashed ghost
    assert working.locator("g.edge.removed").get_attribute("data-pair") == "X2|X3"
    assert working.locator("g.edge:not(.removed)").count() == 1
    page.keyboard.press("ArrowRight")  # step 7: a malformed action, rejected
    assert slider.input_value() == "7"
    assert "rejected" in page.locator("#step-detail").inner_text()
    assert page.locator("#step-list tr.current").get_attribute("data-step") == "7"

    # after the episode: the true graph beside the submitted one, edges marked
    comparison = payload["comparison"]
    truth = page.locator("#graph-truth svg.graph")
    submitted = page.locator("#graph-submitted svg.graph")
    assert truth.locator("g.edge").count() == len(payload["truth"])
    assert truth.locator("g.edge.correct").count() == len(comparison["correct"])
    assert truth.locator("g.edge.missing").count() == len(comparison["missing"])
    assert submitted.locator("g.edge.extra").count() == len(comparison["extra"])
    assert submitted.locator("g.edge.correct").count() == len(comparison["correct"])
    counts = page.locator("#outcome-counts").inner_text()
    assert f"{len(comparison['correct'])} correct" in counts

    page.click("#back-link")
    assert page.locator("#episodes tbody tr").count() == 2  # the filters are kept


def test_a_language_model_step_shows_its_output_and_tokens(page, base_url, pages):
    index = json.loads(re.search(r'type="application/json">(.*?)</script>',
                                 (pages / "viewer" / "index.html").read_text(), re.S).group(1))
    row = next(dict(zip(index["columns"], r, strict=True)) for r in index["rows"]
               if index["runs"][r[1]]["policy"] == "llm-heuristic")
    page.goto(f"{base_url}/viewer/index.html#episode={row['file']}&step=1")
    page.wait_for_selector("#step-output")
    assert page.locator("#step-output").inner_text().startswith("pc-kci (alpha=")
    detail = page.locator("#step-detail").inner_text()
    assert re.search(r"\d+ tokens in, \d+ out", detail)
    assert "The model's text" in detail
    assert page.locator("#episode table.kv").first.inner_text().count("tokens") >= 1


def test_the_site_works_from_file_urls(page, pages):
    page.goto((pages / "viewer" / "index.html").as_uri())
    page.locator("#episodes tbody tr a").first.click()
    page.wait_for_selector("#graph-working svg.graph")
    assert page.locator("#graph-working g.node").count() == 5


def test_the_report_page_leads_with_the_headline_and_links_to_the_viewer(page, base_url,
                                                                         tmp_path):
    page.goto(f"{base_url}/report/report.html")
    headings = page.locator("body > h1, body > h2").all_inner_texts()
    assert headings[:2] == ["Heuresis report", "Headline"]
    first_table = page.locator("table").first
    assert first_table.get_attribute("id") == "headline"
    assert page.locator("figure img").first.get_attribute("alt").startswith("Figure 6 (left)")
    box_table = first_table.bounding_box()
    box_figure = page.locator("figure").first.bounding_box()
    assert box_table["y"] < box_figure["y"] < 1200  # the headline figure near the top
    configuration = page.locator("details").last
    assert configuration.locator("summary").inner_text() == "Configuration"
    assert not configuration.locator("ul").is_visible()  # folded
    save_screenshot(page, "report-page.png", tmp_path)
    configuration.locator("summary").click()
    assert configuration.locator("ul").is_visible()

    link = page.locator("#headline a", has_text=re.compile(r"^\d\.\d{3}")).first
    row_label = link.locator("xpath=ancestor::tr/td[1]").inner_text()
    link.click()
    page.wait_for_selector("#episodes")
    assert "/viewer/index.html#" in page.url
    (policy,) = chosen(page, "#filter-policy")
    assert policy == row_label  # one arm per policy here: the label is the policy's name
    assert chosen(page, "#filter-family") == ["lg"]
    policies = set(column(page, 3))
    families = set(column(page, 4))
    assert policies == {policy} and families == {"lg"}
    assert page.locator("#episodes tbody tr").count() == 2


def test_several_values_a_score_range_and_a_search_over_tools(page, base_url, pages):
    page.goto(f"{base_url}/viewer/index.html")
    rows = page.locator("#episodes tbody tr")
    no_horizontal_overflow(page)
    choose(page, "#filter-family", ["lg", "anm"])
    choose(page, "#filter-policy", ["bca", EVIDENCE_POLICY])
    assert rows.count() == 8 and set(column(page, 3)) == {"bca", EVIDENCE_POLICY}
    assert "policy=" in page.url and "%2C" in page.url  # several values, joined in the URL
    assert page.locator("#filter-policy summary").inner_text() == "2 policies"
    # a score range: F1 at most the lowest F1 shown keeps only those episodes
    f1 = sorted(float(x) for x in column(page, 5))
    page.fill("#filter-f1-max", str(f1[0]))
    assert all(float(x) <= f1[0] for x in column(page, 5)) and rows.count() >= 1
    page.fill("#filter-f1-max", "")
    page.fill("#filter-f1-min", "1.01")
    assert rows.count() == 0 and page.locator("#episode-count").inner_text().startswith("0 of")
    page.fill("#filter-f1-min", "")
    # the search reads the tools and arguments: only the scripted policy calls describe_data
    choose(page, "#filter-policy", [])
    page.fill("#filter-text", "describe_data")
    assert rows.count() == 4 and set(column(page, 3)) == {EVIDENCE_POLICY}
    index = json.loads(re.search(r'type="application/json">(.*?)</script>',
                                 (pages / "viewer" / "index.html").read_text(), re.S).group(1))
    table = [dict(zip(index["columns"], r, strict=True)) for r in index["rows"]]
    expected = [r for r in table if r["family"] in ("lg", "anm")
                and all(w in r["search"].lower() for w in ("remove_edge", "x3"))]
    page.fill("#filter-text", "remove_edge X3")  # every word must match, in any field
    assert rows.count() == len(expected) >= 4
    page.reload()
    assert page.locator("#filter-text").input_value() == "remove_edge X3"


def test_two_episodes_on_one_instance_side_by_side(page, base_url, pages, tmp_path):
    index = json.loads(re.search(r'type="application/json">(.*?)</script>',
                                 (pages / "viewer" / "index.html").read_text(), re.S).group(1))
    table = [dict(zip(index["columns"], r, strict=True)) for r in index["rows"]]
    policy_of = {k: run["policy"] for k, run in enumerate(index["runs"])}
    first = next(r for r in table if policy_of[r["run"]] == EVIDENCE_POLICY
                 and r["id"] == "lg/dev/0/r0")
    other = next(r for r in table if policy_of[r["run"]] == "bca" and r["id"] == "lg/dev/0/r0")
    page.goto(f"{base_url}/viewer/index.html#episode={first['file']}")
    page.wait_for_selector("#compare-with")
    options = page.locator("#compare-with option").all_inner_texts()[1:]
    assert len(options) == 2  # the two other runs' episodes on this instance
    page.select_option("#compare-with", other["file"])
    page.wait_for_selector("#compare")
    assert f"compare={first['file']}%2C{other['file']}" in page.url
    a, b = episode_payload(pages, first["file"]), episode_payload(pages, other["file"])
    edges_a = {frozenset(e[:2]): e for e in a["final"]}
    edges_b = {frozenset(e[:2]): e for e in b["final"]}
    only_a = len(set(edges_a) - set(edges_b))
    only_b = len(set(edges_b) - set(edges_a))
    counts = page.locator("#compare-counts").inner_text()
    assert f"only in A ({only_a})" in counts and f"only in B ({only_b})" in counts
    diff = page.locator("#compare-diff svg.graph")
    assert diff.locator("g.edge.only-a").count() == only_a
    assert diff.locator("g.edge.only-b").count() == only_b
    summary = page.locator("#compare-summary").inner_text()
    assert f"{a['scores']['f1']:.3f}" in summary and f"{b['scores']['f1']:.3f}" in summary
    assert page.locator("#compare-steps-a tbody tr").count() == len(a["steps"])
    assert page.locator("#compare-steps-b tbody tr").count() == len(b["steps"])
    no_horizontal_overflow(page)
    save_screenshot(page, "viewer-compare.png", tmp_path, full_page=True)
    page.reload()  # the view is in the URL
    page.wait_for_selector("#compare")
    page.click("#back-link")
    page.wait_for_selector("#episodes")


def test_long_options_do_not_overflow_the_page(browser, viewer_runs, tmp_path):
    """A run whose options are long (paths, lists): at 1280 px they wrap in their cell."""
    import shutil

    copy = tmp_path / "run-with-long-options"
    shutil.copytree(viewer_runs["bca"], copy)
    config = json.loads((copy / "config.json").read_text())
    config["policy_options"] = {
        "selection_path": "/home/someone/experiments/heuresis/selections/" + "x" * 80 + ".json",
        "algorithms": ["pc-fisherz", "pc-kci", "ges", "fci", "direct-lingam", "anm", "notears",
                       "notears-mlp", "grasp", "boss"]}
    (copy / "config.json").write_text(json.dumps(config))
    site = build_site([copy, viewer_runs["llm"]], tmp_path / "site")
    tab = browser.new_page()
    try:
        tab.goto(site.index_path.as_uri())
        tab.wait_for_selector("#runs")
        no_horizontal_overflow(tab)
    finally:
        tab.close()
