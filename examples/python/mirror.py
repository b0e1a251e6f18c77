#!/usr/bin/env python3
"""Mirror a whole dataset version in one request, and keep the copy in sync.

  * GET /v1/export, downloaded as it is stored (gzip) into DIR/export.ndjson.gz; a broken
    download resumes where it stopped (Range, with If-Range so a newer export starts afresh);
  * the copy read line by line straight from the gzip file, every resolution record's
    signature checked against /v1/signing-keys;
  * on later runs, GET /v1/changes?since=<the copy's dataset_version>, page by page: nothing
    changed, nothing to do; something changed (or the copy is older than the change log: 422),
    one request downloads the new export.

Usage:
    python mirror.py --base-url http://127.0.0.1:8080 --api-key vmk_demo_enterprise --dir mirror

--break-after BYTES drops the first download after that many bytes, as a lost connection
would, so the resume runs. Exits non-zero if the copy cannot be made or does not verify.
"""
import argparse
import gzip
import json
import os
import sys

import requests

from client import verify_record


def download(session, base_url, directory, break_after=None):
    """Fetches the export into DIR/export.ndjson.gz; returns its ETag, or None if it broke off."""
    part, part_state = os.path.join(directory, "export.ndjson.gz.part"), os.path.join(directory, "part.json")
    headers = {"Accept-Encoding": "gzip"}
    have = os.path.getsize(part) if os.path.exists(part) else 0
    if have and os.path.exists(part_state):
        headers["Range"] = f"bytes={have}-"
        headers["If-Range"] = json.load(open(part_state))["etag"]
    with session.get(f"{base_url}/v1/export", headers=headers, stream=True, timeout=60) as response:
        if response.status_code == 416:
            # The part already holds every byte of this very export (If-Range matched), or more.
            complete = response.headers["Content-Range"] == f"bytes */{have}"
            os.replace(part, os.path.join(directory, "export.ndjson.gz")) if complete else os.remove(part)
            os.remove(part_state)
            return headers["If-Range"] if complete else None
        if response.status_code not in (200, 206):
            sys.exit(f"FAILED: export answered {response.status_code}: {response.text}")
        etag = response.headers["ETag"]
        resumed = response.status_code == 206
        if resumed:
            print(f"resumed at byte {have}: {response.headers['Content-Range']}")
        else:
            have = 0
        total = int(response.headers["Content-Range"].rsplit("/", 1)[1]) if resumed else int(response.headers["Content-Length"])
        json.dump({"etag": etag}, open(part_state, "w"))
        with open(part, "ab" if resumed else "wb") as out:
            # The stored gzip bytes, not decoded: a resumed range is only part of a gzip stream.
            for chunk in response.raw.stream(64 * 1024, decode_content=False):
                if break_after is not None and have + len(chunk) >= break_after:
                    out.write(chunk[: break_after - have])
                    print(f"download broke off after {break_after} of {total} bytes")
                    return None
                out.write(chunk)
                have += len(chunk)
    if have != total:
        return None
    os.replace(part, os.path.join(directory, "export.ndjson.gz"))
    os.remove(part_state)
    return etag


def read_copy(directory, keys_by_kid):
    """The copy's header line and company lines, every signed record verified."""
    with gzip.open(os.path.join(directory, "export.ndjson.gz"), "rt", encoding="utf-8") as lines:
        header = json.loads(next(lines))
        companies = [json.loads(line) for line in lines]
    if header["companies"] != len(companies):
        sys.exit(f"FAILED: the header announces {header['companies']} companies, the copy has {len(companies)}")
    for company in companies:
        verify_record(company["resolution"], keys_by_kid)
    return header, companies


def changes_since(session, base_url, since):
    """Every change since `since`, or None when the change log cannot answer (re-sync)."""
    changes, cursor = [], None
    while True:
        params = {"since": since, "limit": 200, **({"cursor": cursor} if cursor else {})}
        response = session.get(f"{base_url}/v1/changes", params=params, timeout=30)
        if response.status_code == 422:
            print(f"the change log cannot answer for {since}: {response.json()['detail']}")
            return None
        response.raise_for_status()
        page = response.json()
        changes += page["changes"]
        cursor = page["page"]["next_cursor"]
        if not cursor:
            return changes


def mirror(session, base_url, directory, break_after):
    etag = download(session, base_url, directory, break_after)
    while etag is None:
        etag = download(session, base_url, directory)
    keys = {k["kid"]: k for k in session.get(f"{base_url}/v1/signing-keys", timeout=30).json()["keys"]}
    header, companies = read_copy(directory, keys)
    version = header["meta"]["dataset_version"]
    json.dump({"dataset_version": version, "etag": etag}, open(os.path.join(directory, "state.json"), "w"))
    print(f"mirrored dataset {version}: {len(companies)} companies, "
          f"{sum(len(c['events']) for c in companies)} events, {len(companies)} signed records verified")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8080")
    parser.add_argument("--api-key", default="vmk_demo_enterprise")
    parser.add_argument("--dir", default="mirror")
    parser.add_argument("--break-after", type=int, help="drop the first download after this many bytes")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    session = requests.Session()
    session.headers["X-API-Key"] = args.api_key
    state_file = os.path.join(args.dir, "state.json")
    if os.path.exists(state_file):
        since = json.load(open(state_file))["dataset_version"]
        changes = changes_since(session, args.base_url, since)
        if changes == []:
            print(f"up to date: nothing changed since {since}")
            return
        if changes:
            kinds = {}
            for change in changes:
                for kind in change["changes"]:
                    kinds[kind] = kinds.get(kind, 0) + 1
            print(f"{len(changes)} companies changed since {since} ({json.dumps(kinds, sort_keys=True)}); "
                  f"downloading the new export")
    mirror(session, args.base_url, args.dir, args.break_after)


if __name__ == "__main__":
    main()
