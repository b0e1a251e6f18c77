#!/usr/bin/env python3
"""What the SDK costs over plain HTTP, measured against a live server in the same run.

Each figure is the median of ``--runs`` timed runs (after one warm-up) of the SDK and of a raw
reference written with httpx alone, the two interleaved (and their order alternated) so drift
in the machine hits both alike. Printed as a Markdown table: medians, and the SDK's time as a
ratio to the reference.

  companies_frame  Client.companies_frame() against an httpx loop over /v1/companies?limit=200
                   following page.next_cursor, building the same rows and the same DataFrame.
  export           iterating Client.export() (typed ExportCompany lines, gzip decoded by the
                   SDK) against httpx streaming /v1/export (Accept-Encoding: gzip) and splitting
                   lines (iter_lines); a second reference also json.loads each line.
  download         Client.download_export(path) against httpx streaming the gzip bytes to a file.

Usage:
    python bench/bench.py --base-url http://127.0.0.1:8081 --api-key KEY [--runs 7] [--only frame]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

import httpx
import pandas as pd

from valuation_marks import Client

COLUMNS = (
    "slug",
    "name",
    "aliases",
    "sector",
    "status",
    "as_of_date",
    "value_usd",
    "lower_usd",
    "upper_usd",
    "confidence",
    "delta_30d_pct",
    "last_event_on",
    "last_event_type",
    "last_event_usd",
    "days_since_last_event",
    "outcome_type",
    "outcome_on",
    "vs_last_event_pct",
)


def reference_frame(http: httpx.Client, base_url: str) -> pd.DataFrame:
    """The raw reference: page with httpx, build the rows and the DataFrame by hand."""
    rows: list[tuple[Any, ...]] = []
    cursor: Optional[str] = None
    meta: dict[str, Any] = {}
    while True:
        params: dict[str, Any] = {"limit": 200, **({"cursor": cursor} if cursor else {})}
        response = http.get(f"{base_url}/v1/companies", params=params)
        response.raise_for_status()
        body = response.json()
        meta = meta or body["meta"]
        for item in body["companies"]:
            mark = item["latest_mark"]
            last = item["last_event"] or {}
            outcome = item["outcome"] or {}
            rows.append(
                (
                    item["slug"],
                    item["name"],
                    "; ".join(item["aliases"]),
                    item["sector"],
                    item["status"],
                    mark["as_of_date"],
                    mark["value_usd"],
                    mark["lower_usd"],
                    mark["upper_usd"],
                    mark["confidence"],
                    item["delta_30d_pct"],
                    last.get("occurred_on"),
                    last.get("event_type"),
                    last.get("valuation_usd"),
                    item["days_since_last_event"],
                    outcome.get("event_type"),
                    outcome.get("occurred_on"),
                    mark["vs_last_event_pct"],
                )
            )
        cursor = body["page"]["next_cursor"]
        if not cursor:
            break
    frame = pd.DataFrame.from_records(rows, columns=COLUMNS)
    for name in ("as_of_date", "last_event_on", "outcome_on"):
        frame[name] = pd.to_datetime(frame[name], format="%Y-%m-%d")
    for name in ("delta_30d_pct", "vs_last_event_pct", "last_event_usd"):
        frame[name] = frame[name].astype("float64")
    frame["days_since_last_event"] = frame["days_since_last_event"].astype("Int64")
    frame = frame.set_index("slug")
    frame.attrs["meta"] = meta
    return frame


def reference_export_lines(http: httpx.Client, base_url: str, parse: bool) -> int:
    count = 0
    with http.stream("GET", f"{base_url}/v1/export") as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line:
                if parse:
                    json.loads(line)
                count += 1
    return count - 1  # the header line


def reference_download(http: httpx.Client, base_url: str, path: Path) -> int:
    with http.stream("GET", f"{base_url}/v1/export") as response, open(path, "wb") as out:
        response.raise_for_status()
        for chunk in response.iter_raw():
            out.write(chunk)
    return path.stat().st_size


def measure(runs: int, contenders: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Median seconds of each contender; interleaved, order alternated, one warm-up each."""
    for run in contenders.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for index in range(runs):
        for name in names if index % 2 == 0 else reversed(names):
            started = time.perf_counter()
            contenders[name]()
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--only", choices=["frame", "export", "download"])
    args = parser.parse_args()
    base = args.base_url.rstrip("/")
    headers = {"X-API-Key": args.api_key, "Accept-Encoding": "gzip"}
    rows: list[tuple[str, str, float, float]] = []
    with (
        Client(api_key=args.api_key, base_url=base) as client,
        httpx.Client(headers=headers, timeout=60) as http,
        tempfile.TemporaryDirectory() as tmp,
    ):
        n = len(client.companies_frame())
        if args.only in (None, "frame"):
            assert client.companies_frame().equals(reference_frame(http, base)), "the two frames differ"
            t = measure(
                args.runs, {"sdk": client.companies_frame, "raw": lambda: reference_frame(http, base)}
            )
            rows.append((f"companies_frame() ({n} companies)", "httpx paging loop", t["sdk"], t["raw"]))
        if args.only in (None, "export"):
            assert sum(1 for _ in client.export()) == reference_export_lines(http, base, parse=False)
            t = measure(
                args.runs,
                {
                    "sdk": lambda: sum(1 for _ in client.export()),
                    "dicts": lambda: sum(1 for _ in client.export(raw=True)),
                    "raw": lambda: reference_export_lines(http, base, parse=False),
                    "json": lambda: reference_export_lines(http, base, parse=True),
                },
            )
            for what, sdk in (
                (f"export() ({n} companies)", "sdk"),
                (f"export(raw=True) ({n} companies)", "dicts"),
            ):
                rows.append((what, "httpx iter_lines", t[sdk], t["raw"]))
                rows.append((what, "httpx iter_lines + json.loads", t[sdk], t["json"]))
        if args.only in (None, "download"):
            sdk_path, raw_path = Path(tmp) / "sdk.ndjson.gz", Path(tmp) / "raw.ndjson.gz"
            assert client.download_export(sdk_path).size == reference_download(http, base, raw_path)
            assert sdk_path.read_bytes() == raw_path.read_bytes()
            t = measure(
                args.runs,
                {
                    "sdk": lambda: client.download_export(sdk_path),
                    "raw": lambda: reference_download(http, base, raw_path),
                },
            )
            rows.append(
                (f"download_export(path) ({n} companies)", "httpx iter_raw to a file", t["sdk"], t["raw"])
            )
    print(f"medians of {args.runs} runs against {base}\n")
    print("| SDK | reference | SDK median | reference median | ratio |")
    print("|---|---|---:|---:|---:|")
    for what, reference, sdk_time, raw_time in rows:
        ratio = sdk_time / raw_time
        print(
            f"| {what} | {reference} | {sdk_time * 1000:.1f} ms | {raw_time * 1000:.1f} ms | {ratio:.2f}x |"
        )


if __name__ == "__main__":
    main()
