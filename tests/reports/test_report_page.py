"""The report page people read: headline first, configuration folded at the end, policy styles
fixed across figures, legends outside the data, labels without URLs, no layout warnings, and
cells linking to the trace viewer."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from heuresis_env.errors import HeuresisError
from heuresis_env.reports import build_report, load_runs
from heuresis_env.reports import figures as report_figures
from heuresis_env.reports.figures import MARKERS, PALETTE, PolicyStyles
from heuresis_env.reports.loading import build_arms, run_names
from tests.reports.report_fixtures import write_synthetic_run


@pytest.fixture(scope="module")
def runs(standard_runs) -> dict[str, Path]:
    return standard_runs


@pytest.fixture(scope="module")
def page_report(runs, tmp_path_factory):
    """The report built with every warning an error: a matplotlib layout warning (constrained
    layout not applied, a legend that does not fit) fails the build."""
    out = tmp_path_factory.mktemp("report")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = build_report(list(runs.values()), out, deletion_signals=["lg:1"],
                               n_resamples=300, seed=1, proposition_kept=200,
                               viewer="../viewer/index.html")
    return summary


def test_the_page_leads_with_the_headline_and_ends_with_the_folded_configuration(page_report):
    page = page_report.html_path.read_text()
    body = page[page.index("<body>"):]
    headline = body.index('<table id="headline">')
    first_figure = body.index("<figure>")
    assert headline < first_figure < body.index('<table id="table6_references">')
    alt = re.search(r'<figure><img src="[^"]*" alt="([^"]*)"', body[first_figure:]).group(1)
    assert alt.startswith("Figure 6 (left)")
    # nothing but the title and the headline heading before the headline table
    assert re.findall(r"<(ul|p|details)[ >]", body[:headline]) == []
    configuration = body.index("<summary>Configuration</summary>")
    assert body.rindex("<details", 0, configuration) > body.index('<table id="appendixF_proposition"')
    assert body.index("</details>", configuration) > body.index("runs: ", configuration)
    markdown = page_report.markdown_path.read_text()
    assert markdown.index("**Headline") < markdown.index("## Configuration")


def test_every_cell_of_the_headline_links_to_the_viewer(page_report, runs):
    page = page_report.html_path.read_text()
    table = page[page.index('<table id="headline">'):]
    table = table[:table.index("</table>")]
    names = dict(zip((str(p) for p in runs.values()), run_names(list(runs.values())),
                     strict=True))
    links = re.findall(r'<a href="([^"]+)">([^<]+)</a>', table)
    assert links
    by_label = {}
    for href, _text in links:
        assert href.startswith("../viewer/index.html#")
        query = parse_qs(href.split("#", 1)[1].replace("&amp;", "&"))
        by_label.setdefault(query["policy"][0], []).append(query)
    # agent has three arms (unguided, guided, minimal toolbox): each link names its run
    agent = by_label["agent"]
    assert {q["run"][0] for q in agent} == {names[str(runs[k])] for k in
                                            ("agent", "agent-guided", "agent-minimal")}
    assert all("run" not in q for q in by_label["bca"])
    rows = table.count("<tr>") - 1
    families = {q["family"][0] for qs in by_label.values() for q in qs if "family" in q}
    assert families == {"lg", "anm"}
    # the policy cell and one cell per family and "all" link, in every row
    assert len(links) == rows * (1 + len(families) + 1)
    # the other tables link their policy cells: 6b, 7, 13 and the cost table
    for key, policy in (("table6_policies", "agent"), ("table7", "bca"), ("table13", "oracle"),
                        ("table12_cost", "llm-sim")):
        block = page[page.index(f'<table id="{key}">'):]
        block = block[:block.index("</table>")]
        assert f'<a href="../viewer/index.html#policy={policy}&amp;family=lg' in block, key


def test_policy_styles_are_distinct_and_fixed_per_label():
    labels = [f"policy-{k}" for k in range(40)]
    styles = PolicyStyles(labels)
    assert len(set(PALETTE)) == len(PALETTE) >= 19
    assert len({styles.color(label) for label in labels[:len(PALETTE)]}) == len(PALETTE)
    pairs = {(styles.color(label), styles.marker(label), styles.hatch(label)) for label in labels}
    assert len(pairs) == len(labels)
    assert len({styles.marker(label) for label in labels[:len(MARKERS)]}) == len(MARKERS)
    # the demo's 13 policies (and the references) no longer share colours
    demo = ["anm", "router", "boss", "scratchpad", "direct-lingam", "scratchpad-bandit", "fci",
            "ges", "grasp", "notears", "notears-mlp", "pc-fisherz", "rl", "bca", "oracle",
            "pc-kci"]
    demo_styles = PolicyStyles(demo)
    assert len({demo_styles.color(p) for p in demo}) == len(demo)
    # a later look-up never moves a label
    before = [styles.color(label) for label in labels]
    styles.color("new-policy")
    assert [styles.color(label) for label in labels] == before


def _rows(labels, families):
    rows = []
    for k, label in enumerate(labels):
        for family in families:
            rows.append({"label": label, "family": family, "mean_all": 0.5 + 0.02 * k,
                         "mean_finished": 0.55, "truncation_rate": 0.1 * (k % 10)})
    return rows


def _boxes_overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("count", [3, 16, 24])
def test_legends_stay_outside_the_axes_and_titles_inside_the_figure(count):
    labels = [f"a-long-policy-name-{k} [guided]" for k in range(count)]
    families = ["lg", "anm", "hetero", "wild", "mixed", "gauntlet", "all"]
    rows = _rows(labels, families)
    references = [{"family": f, "bca": 0.7, "pc_kci": 0.6, "oracle": 0.9} for f in families]
    styles = PolicyStyles(labels)
    drawn = [report_figures.draw_figure6_f1(rows, references, families, styles),
             report_figures.draw_figure_reporting_rule(rows, styles),
             report_figures.draw_figure_cost(
                 [{"label": r["label"], "family": r["family"], "cost": 0.01, "f1": 0.5}
                  for r in rows], styles)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for figure in drawn:
            FigureCanvasAgg(figure)
            figure.canvas.draw()  # runs constrained layout; a layout warning is an error here
            renderer = figure.canvas.get_renderer()
            axes = figure.axes[0]
            frame = axes.get_window_extent(renderer)
            assert figure.legends, "the legend is a figure legend, beside the axes"
            for legend in figure.legends:
                assert not _boxes_overlap(legend.get_window_extent(renderer), frame)
            whole = figure.bbox
            title = axes.title.get_window_extent(renderer)
            assert whole.x0 <= title.x0 and title.x1 <= whole.x1  # not cut
            assert frame.width > 150 and frame.height > 150  # the plot did not collapse


def test_one_label_keeps_its_colour_in_every_figure(runs, tmp_path):
    loaded = load_runs(list(runs.values()))
    styles = PolicyStyles([arm.label for arm in loaded.arms])
    figure_rows = _rows([arm.label for arm in loaded.arms], ["lg", "anm"])
    bars = report_figures.draw_figure6_f1(figure_rows, [], ["lg", "anm"], styles)
    points = report_figures.draw_figure_cost(
        [{"label": r["label"], "family": r["family"], "cost": 0.01, "f1": 0.5}
         for r in figure_rows], styles)
    from matplotlib.colors import to_hex

    bar_colours = {bars_of.get_label(): to_hex(bars_of.patches[0].get_facecolor())
                   for bars_of in bars.axes[0].containers}
    point_colours = {c.get_label(): to_hex(c.get_facecolor()[0])
                     for c in points.axes[0].collections}
    for label in bar_colours:
        assert bar_colours[label] == point_colours[label] == styles.color(label)


def test_labels_name_policies_not_addresses_or_keys(tmp_path):
    base = dict(family="lg", f1=[0.5, 0.6])
    paths = []
    for arm, port in (("openai", 41231), ("anthropic", 41232)):
        path = write_synthetic_run(tmp_path / arm, "llm", **base)
        config = json.loads((path / "config.json").read_text())
        config["policy_options"] = {"backend": arm, "model": "m",
                                    "base_url": f"http://127.0.0.1:{port}/v1",
                                    "api_key": "sk-secret", "name": f"llm-{arm}"}
        (path / "config.json").write_text(json.dumps(config))
        paths.append(path)
    arms = build_arms([load_runs([p]).runs[0] for p in paths])
    labels = sorted(arm.label for arm in arms)
    assert labels == ["llm-anthropic", "llm-openai"]
    # runs that differ only in an address are one arm (the address is how to reach the
    # model, not what the policy is): the same episodes twice are refused, never labelled
    for path in paths:
        config = json.loads((path / "config.json").read_text())
        config["policy_options"] = {"base_url": config["policy_options"]["base_url"]}
        (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(HeuresisError, match="appears in two runs with the same settings"):
        build_arms([load_runs([p]).runs[0] for p in paths])
    other = write_synthetic_run(tmp_path / "other-family", "llm", family="anm", f1=[0.7])
    config = json.loads((other / "config.json").read_text())
    config["policy_options"] = {"base_url": "http://127.0.0.1:50000/v1"}
    (other / "config.json").write_text(json.dumps(config))
    (arm,) = build_arms([load_runs([p]).runs[0] for p in (paths[0], other)])
    assert arm.label == "llm" and len(arm.episodes) == 3


def test_a_figure_drawn_once_is_copied_from_the_cache_with_its_styles(tmp_path, monkeypatch):
    monkeypatch.setenv("HEURESIS_CACHE_DIR", str(tmp_path / "cache"))
    families = ["lg", "anm"]
    rows = _rows(["a", "b"], families)
    drawn: list[str] = []
    draw = report_figures.draw_figure6_f1

    def counting(*args, **kwargs):
        drawn.append("f1")
        return draw(*args, **kwargs)

    monkeypatch.setattr(report_figures, "draw_figure6_f1", counting)
    first_styles, second_styles = PolicyStyles(["a"]), PolicyStyles(["a"])
    first = report_figures.figure6_f1(rows, [], families, tmp_path / "one.png", first_styles)
    second = report_figures.figure6_f1(rows, [], families, tmp_path / "two.png", second_styles)
    assert drawn == ["f1"]  # the second came from the cache
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes().startswith(b"\x89PNG")
    # drawing gave "b" a style; the copy gives it the same, so later figures agree
    assert second_styles.labels == first_styles.labels == ["a", "b"]
    changed = [dict(rows[0], mean_all=0.9), *rows[1:]]  # another number: drawn again
    report_figures.figure6_f1(changed, [], families, tmp_path / "three.png", PolicyStyles(["a"]))
    assert drawn == ["f1", "f1"]
    other_order = report_figures.figure6_f1(rows, [], families, tmp_path / "four.png",
                                            PolicyStyles(["b", "a"]))  # other colours
    assert drawn == ["f1", "f1", "f1"] and other_order.read_bytes() != first.read_bytes()


def test_figure_inputs_without_a_key_are_drawn_every_time():
    class Opaque:  # its repr would not name the numbers it holds
        auc = 0.5

    with pytest.raises(TypeError, match="no cache key"):
        report_figures._plain({"signal": Opaque()})
