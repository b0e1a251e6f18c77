"""Exports resumed after a broken connection equal the unbroken download.

The breaks are real: ``CuttingProxy`` relays the live server's bytes and closes the connection
after N of them; the client then asks for the rest with ``Range`` and ``If-Range``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from valuation_marks import AsyncClient, Client, ExportChanged, ExportCompany, read_export

from .conftest import Server, run_server
from .proxy import CuttingProxy


@pytest.fixture
def direct(server: Server) -> Iterator[Client]:
    with Client(api_key=server.keys["enterprise"], base_url=server.base_url) as client:
        yield client


def check_resumed(proxy: CuttingProxy, etag: str | None, resumed_at: list[int]) -> None:
    assert proxy.connections == 2 and len(resumed_at) == 1
    first, second = proxy.request_headers(0), proxy.request_headers(1)
    assert "range" not in first and first["accept-encoding"] == "gzip"
    assert 0 < resumed_at[0] < proxy.cut_after  # the body bytes that got through
    assert second["range"] == f"bytes={resumed_at[0]}-"
    assert second["if-range"] == etag


def test_a_streamed_export_resumes_after_a_cut(server: Server, direct: Client) -> None:
    unbroken = direct.export()
    expected = [line.raw for line in unbroken]
    with CuttingProxy(server.port, cut_after=30_000) as proxy:
        with Client(api_key=server.keys["enterprise"], base_url=proxy.base_url) as client:
            stream = client.export()
            resumed = [line.raw for line in stream]
            assert client.stats.resumes == 1
        check_resumed(proxy, stream.etag, stream.resumed_at)
    assert resumed == expected
    assert stream.etag == unbroken.etag and stream.bytes_received == unbroken.bytes_received


@pytest.mark.anyio
async def test_a_streamed_series_export_resumes_after_cuts_async(server: Server, direct: Client) -> None:
    expected = [line.raw for line in direct.export_series(coverage=95)]
    with CuttingProxy(server.port, cut_after=100_000, cuts=3) as proxy:
        async with AsyncClient(api_key=server.keys["enterprise"], base_url=proxy.base_url) as client:
            stream = client.export_series(coverage=95)
            resumed = [line.raw async for line in stream]
        assert proxy.connections == 4 and stream.resumes == 3
        assert proxy.request_headers(3)["range"] == f"bytes={stream.resumed_at[-1]}-"
    assert resumed == expected


def test_a_download_resumes_after_a_cut(server: Server, direct: Client, tmp_path: Path) -> None:
    whole = direct.download_export(tmp_path / "whole.ndjson.gz")
    with CuttingProxy(server.port, cut_after=25_000) as proxy:
        with Client(api_key=server.keys["enterprise"], base_url=proxy.base_url) as client:
            result = client.download_export(tmp_path / "export.ndjson.gz")
        assert result.resumed_from is not None
        check_resumed(proxy, result.etag, [result.resumed_from])
    assert (
        result.complete
        and result.content_range == f"bytes {result.resumed_from}-{whole.size - 1}/{whole.size}"
    )
    assert result.path.read_bytes() == whole.path.read_bytes()
    assert not (tmp_path / "export.ndjson.gz.part").exists()
    assert not (tmp_path / "export.ndjson.gz.part.json").exists()


@pytest.mark.anyio
async def test_a_download_resumes_after_a_cut_async(server: Server, direct: Client, tmp_path: Path) -> None:
    whole = direct.download_export(tmp_path / "whole.ndjson.gz")
    with CuttingProxy(server.port, cut_after=40_000) as proxy:
        async with AsyncClient(api_key=server.keys["enterprise"], base_url=proxy.base_url) as client:
            result = await client.download_export(tmp_path / "export.ndjson.gz")
        assert result.resumed_from is not None
        check_resumed(proxy, result.etag, [result.resumed_from])
    assert result.path.read_bytes() == whole.path.read_bytes()


def test_a_part_left_by_an_earlier_run_is_resumed(server: Server, direct: Client, tmp_path: Path) -> None:
    target = tmp_path / "export.ndjson.gz"
    part = direct.download_export(target, max_bytes=20_000)
    assert not part.complete and part.size == 20_000 and part.path == tmp_path / "export.ndjson.gz.part"
    assert part.path.stat().st_size == 20_000 and part.total is not None and part.total > 20_000
    with Client(api_key=server.keys["enterprise"], base_url=server.base_url) as later:  # a new process, say
        rest = later.download_export(target)
    assert rest.complete and rest.resumed_from == 20_000
    assert rest.content_range == f"bytes 20000-{part.total - 1}/{part.total}"
    assert [line.raw for line in read_export(target)] == [line.raw for line in direct.export()]


def test_a_complete_part_is_finished_by_a_416(server: Server, direct: Client, tmp_path: Path) -> None:
    whole = direct.download_export(tmp_path / "whole.ndjson.gz")
    target = tmp_path / "export.ndjson.gz"
    shutil.copy(whole.path, tmp_path / "export.ndjson.gz.part")
    url = f"{server.base_url}/v1/export"
    (tmp_path / "export.ndjson.gz.part.json").write_text(json.dumps({"url": url, "etag": whole.etag}))
    sent = direct.stats.requests
    result = direct.download_export(target)
    assert direct.stats.requests == sent + 1 and direct.last_response is not None
    assert direct.last_response.status == 416  # "you have it all" is the answer to bytes=<size>-
    assert result.complete and target.read_bytes() == whole.path.read_bytes()


# ---------------------------------------------------------------------------------------------
# The export is replaced while a download is broken off: If-Range makes the server send the new
# one whole. A stream that already handed out lines of the old one raises ExportChanged; a
# download to a file starts afresh.


@pytest.fixture
def swappable(server: Server, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    live = tmp_path / "live.snap"
    shutil.copy(server.workdir / "sample.snap", live)
    # The swap goes back to the previous dataset version: a rollback, which the server allows
    # only when told.
    keys = server.workdir / "keys.toml"
    with run_server(server.marks_bin, live, keys, tmp_path, "--allow-rollback") as base_url:
        yield base_url, live


def swap_to_previous(server: Server, base_url: str, live: Path) -> None:
    staged = live.with_name("staged.snap")
    shutil.copy(server.workdir / "previous.snap", staged)
    os.replace(staged, live)
    for _ in range(200):  # the server looks every 500 ms
        if httpx.get(f"{base_url}/readyz").json().get("dataset_version") == server.previous_version:
            return
        time.sleep(0.05)
    raise AssertionError("the server did not pick up the replaced snapshot")


def test_a_stream_raises_export_changed(server: Server, swappable: tuple[str, Path]) -> None:
    base_url, live = swappable
    port = int(base_url.rsplit(":", 1)[1])
    with CuttingProxy(
        port, cut_after=30_000, on_cut=lambda: swap_to_previous(server, base_url, live)
    ) as proxy:
        with Client(api_key=server.keys["enterprise"], base_url=proxy.base_url) as client:
            stream = client.export()
            seen: list[ExportCompany] = []
            with pytest.raises(ExportChanged):
                seen.extend(stream)
        assert proxy.connections == 2 and "if-range" in proxy.request_headers(1)
    assert seen and stream.meta is not None and stream.meta.dataset_version == server.version


def test_a_download_starts_afresh_when_the_export_changed(
    server: Server, swappable: tuple[str, Path], tmp_path: Path
) -> None:
    base_url, live = swappable
    port = int(base_url.rsplit(":", 1)[1])
    target = tmp_path / "export.ndjson.gz"
    with (
        CuttingProxy(
            port, cut_after=30_000, on_cut=lambda: swap_to_previous(server, base_url, live)
        ) as proxy,
        Client(api_key=server.keys["enterprise"], base_url=proxy.base_url) as client,
    ):
        result = client.download_export(target)
    assert result.complete and result.resumed_from is None  # the new export, whole
    copy = read_export(target)
    assert copy.meta.dataset_version == server.previous_version
    assert sum(1 for _ in copy) == copy.header.companies
