"""The examples in examples/python, run as CI runs them, against the live server."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import DEMO_KEY_THUMBPRINT, REPO_DIR, Server, find_sample, served_events

EXAMPLES = REPO_DIR / "examples" / "python"
pytestmark = pytest.mark.skipif(not EXAMPLES.is_dir(), reason="no examples/python beside this package")


def run(script: str, *args: str, cwd: Path = REPO_DIR) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{script} {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_client_example_enterprise(server: Server) -> None:
    out = run("client.py", "--base-url", server.base_url, "--api-key", server.keys["enterprise"])
    assert f"resolution records verify against the pinned key {DEMO_KEY_THUMBPRINT}" in out
    assert "FAILED" not in out


@pytest.mark.slow
def test_client_example_free(server: Server) -> None:
    """Waits out the free tier's Retry-After (about 6 s)."""
    out = run(
        "client.py",
        "--base-url",
        server.base_url,
        "--api-key",
        server.keys["free_example"],
        "--expect-tier",
        "free",
    )
    assert "ok: a free key gets 403 tier_forbidden on /v1/usage" in out
    assert "ok: a 429 was waited out" in out


def test_mirror_example(server: Server, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    common = ("--base-url", server.base_url, "--api-key", server.keys["enterprise"], "--dir", str(mirror))
    out = run("mirror.py", *common, "--break-after", "20000", cwd=EXAMPLES)
    lines = out.splitlines()
    assert lines[0].startswith("download broke off after 20000 of ")
    assert lines[1].startswith("resumed at byte 20000: bytes 20000-")
    assert lines[2].startswith(f"mirrored dataset {server.version}: ")
    out = run("mirror.py", *common, cwd=EXAMPLES)
    assert out.splitlines() == [f"up to date: nothing changed since {server.version}"]
    state = json.loads((mirror / "state.json").read_text())
    (mirror / "state.json").write_text(json.dumps({**state, "dataset_version": server.previous_version}))
    out = run("mirror.py", *common, cwd=EXAMPLES)
    # The companies whose history the served version appended to (the conftest's successor).
    with open(find_sample() / "events.csv", encoding="utf-8") as sample:
        published = {row["event_id"] for row in csv.DictReader(sample)}
    appended = {row["slug"] for row in served_events(server.events_csv) if row["event_id"] not in published}
    assert f"changed since {server.previous_version} (" in out and f'"events": {len(appended)}' in out
    assert out.splitlines()[-1].startswith(f"mirrored dataset {server.version}: ")
    (mirror / "state.json").write_text(json.dumps({**state, "dataset_version": "2001-01-01"}))
    out = run("mirror.py", *common, cwd=EXAMPLES)
    assert out.startswith("the change log cannot answer for 2001-01-01: ")


def test_verify_test_vector_example() -> None:
    out = run("verify_test_vector.py", str(EXAMPLES / "test_vector.json"))
    assert out.startswith("ok: test vector")
    assert (EXAMPLES / "test_vector.json").read_bytes() == (
        Path(__file__).parent / "data" / "test_vector.json"
    ).read_bytes()


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="plot_series.py needs matplotlib")
def test_plot_series_example(server: Server, tmp_path: Path) -> None:
    png = tmp_path / "stripe.png"
    out = run(
        "plot_series.py", "--base-url", server.base_url, "--api-key", server.keys["pro"], "--out", str(png)
    )
    assert out.splitlines()[-1] == f"wrote {png}"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
