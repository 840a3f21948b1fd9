"""Route 7: the viewer breaks on bad input. A transcript of wrong types is skipped with a
warning (a site is still written); a result line of wrong types is skipped, naming the
episode; ``<!--<script>`` and line separators in any string stay inside the embedded JSON;
``heuresis view --serve`` answers only loopback Host names."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from heuresis_env.evaluation import evaluate
from heuresis_env.policy import EpisodeSettings
from heuresis_env.viewer.serve import host_allowed, site_server
from heuresis_env.viewer.site import build_site
from tests.adversarial.adversarial_policies import SCRIPT_BREAKER

ROOT = Path(__file__).resolve().parents[2]
POLICY = "tests.adversarial.adversarial_policies:MalformedTranscript"
SETTINGS = EpisodeSettings(max_steps=5, max_seconds=300.0)


@pytest.fixture(scope="module")
def malformed_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("malformed") / "run"
    evaluate(POLICY, families=["lg"], split="dev", count=2, settings=SETTINGS, out_dir=out,
             d=4, n=100, progress=False, policy_isolation="process",
             policy_options={"label": SCRIPT_BREAKER})
    return out


def embedded_index(site: Path) -> tuple[str, dict]:
    page = (site / "index.html").read_text(encoding="utf-8")
    found = re.search(r'<script id="index-data" type="application/json">(.*?)</script>', page,
                      re.S)
    assert found, "the index data is not embedded in one script element"
    return found.group(1), json.loads(found.group(1))


def test_a_transcript_of_wrong_types_costs_no_site(malformed_run, tmp_path):
    command = [sys.executable, "-m", "heuresis_env.cli", "view", str(malformed_run), "--out",
               str(tmp_path / "site")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    _, index = embedded_index(tmp_path / "site")
    assert len(index["rows"]) == 2
    assert any("transcript not read" in w for w in index["warnings"])


def test_a_result_line_of_wrong_types_is_skipped_naming_the_episode(malformed_run, tmp_path):
    run = tmp_path / "run"
    subprocess.run(["cp", "-r", str(malformed_run), str(run)], check=True)
    results = run / "results.jsonl"
    lines = results.read_text().splitlines()
    record = json.loads(lines[0])
    record["final_graph"] = {"names": 5, "edges": "X1 --- X2"}
    record["instance_sha256"] = 12
    lines[0] = json.dumps(record)
    results.write_text("\n".join(lines) + "\n")
    summary = build_site([run], tmp_path / "site")
    assert summary.n_episodes == 1
    assert any(record["episode_id"] in w and "skipped" in w for w in summary.warnings)


def test_script_breaking_strings_stay_inside_the_embedded_json(malformed_run, tmp_path):
    summary = build_site([malformed_run], tmp_path / "site")
    raw, index = embedded_index(summary.out_dir)
    assert not re.search("[<>&\u2028\u2029]", raw)
    assert SCRIPT_BREAKER in json.dumps(index, ensure_ascii=False)  # the string survives
    for episode_file in (summary.out_dir / "episodes").glob("*.js"):
        text = episode_file.read_text(encoding="utf-8")
        payload = text[text.index(",") + 1: text.rindex(")")]
        assert not re.search("[<>&\u2028\u2029]", payload)


@pytest.mark.parametrize(("host", "allowed"), [
    ("127.0.0.1:8000", True), ("localhost", True), ("LOCALHOST:1", True), ("[::1]:80", True),
    ("evil.example", False), ("evil.example:8000", False), ("127.0.0.1.evil.example", False),
    ("", False), (None, False)])
def test_host_names_are_checked(host, allowed):
    assert host_allowed(host) is allowed


def test_the_served_site_refuses_a_foreign_host_header(malformed_run, tmp_path):
    summary = build_site([malformed_run], tmp_path / "site")
    server = site_server(summary.out_dir, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        statuses = {}
        for host in ("evil.example", f"127.0.0.1:{port}", f"localhost:{port}"):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.putrequest("GET", "/index.html", skip_host=True)
            connection.putheader("Host", host)
            connection.endheaders()
            reply = connection.getresponse()
            reply.read()
            statuses[host] = reply.status
            connection.close()
        assert statuses == {"evil.example": 421, f"127.0.0.1:{port}": 200,
                            f"localhost:{port}": 200}
    finally:
        server.shutdown()
        server.server_close()
