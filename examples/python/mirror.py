#!/usr/bin/env python3
"""Mirror a whole dataset version in one request, and keep the copy in sync (with the SDK).

  * GET /v1/export, stored as it is served (gzip) into DIR/export.ndjson.gz by
    `Client.download_export`; a broken download resumes where it stopped (Range, with If-Range
    so a newer export starts afresh), in this run or the next;
  * the copy read line by line straight from the gzip file (`read_export`), every resolution
    record's signature checked against a pinned key (--trusted-key, the RFC 7638 thumbprint of
    the signer's key; the default is the sample's demo key), its public key from
    /v1/signing-keys;
  * on later runs, `Client.changes(since=<the copy's dataset_version>)`, page by page: nothing
    changed, nothing to do; something changed (or the copy is older than the change log: 422),
    one request downloads the new export.

Usage:
    python mirror.py --base-url http://127.0.0.1:8080 --api-key vmk_demo_enterprise --dir mirror

--break-after BYTES drops the first download after that many bytes, as a lost connection
would, so the resume runs. Exits non-zero if the copy cannot be made or does not verify.
Needs the SDK: pip install ./clients/python
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from valuation_marks import (
    Change,
    Client,
    Download,
    ExportCompany,
    ExportCorrupt,
    ExportHeader,
    InvalidParameter,
    SignatureError,
    SigningKeys,
    read_export,
)

# The thumbprint (kid) of the sample's demo signing key, sample/demo-signing-key.pem.
DEMO_KEY_THUMBPRINT = "8cFQvvPN3YW3NukGbuYF1Nl_KFW3PuXFAmgKKMweRBY"


def download(client: Client, directory: str, break_after: int | None = None) -> Download:
    """Fetches (or resumes) the export into DIR/export.ndjson.gz; stops early at break_after bytes."""
    result = client.download_export(os.path.join(directory, "export.ndjson.gz"), max_bytes=break_after)
    if result.resumed_from is not None:
        print(f"resumed at byte {result.resumed_from}: {result.content_range}")
    if not result.complete:
        print(f"download broke off after {result.size} of {result.total} bytes")
    return result


def read_copy(directory: str, trusted: str, keys: SigningKeys) -> tuple[ExportHeader, list[ExportCompany]]:
    """The copy's header line and company lines, every signed record verified against `trusted`."""
    try:
        copy = read_export(os.path.join(directory, "export.ndjson.gz"))
        companies = list(copy)  # checks the count the header announces
        for company in companies:
            company.resolution.verify(trusted, keys=keys)
    except (ExportCorrupt, SignatureError) as error:
        sys.exit(f"FAILED: {error}")
    return copy.header, companies


def changes_since(client: Client, since: str) -> list[Change] | None:
    """Every change since `since`, or None when the change log cannot answer (re-sync)."""
    try:
        return list(client.changes(since=since, limit=200))
    except InvalidParameter as error:
        print(f"the change log cannot answer for {since}: {error.detail}")
        return None


def mirror(client: Client, directory: str, break_after: int | None, trusted: str) -> None:
    result = download(client, directory, break_after)
    for _ in range(10):
        if result.complete:
            break
        result = download(client, directory)
    else:
        sys.exit("FAILED: the export did not complete")
    header, companies = read_copy(directory, trusted, client.signing_keys())
    version = header.meta.dataset_version
    with open(os.path.join(directory, "state.json"), "w", encoding="utf-8") as state:
        json.dump({"dataset_version": version, "etag": result.etag}, state)
    print(
        f"mirrored dataset {version}: {len(companies)} companies, "
        f"{sum(len(c.events) for c in companies)} events, {len(companies)} signed records verified"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8080")
    parser.add_argument("--api-key", default="vmk_demo_enterprise")
    parser.add_argument("--dir", default="mirror")
    parser.add_argument("--break-after", type=int, help="drop the first download after this many bytes")
    parser.add_argument(
        "--trusted-key", default=DEMO_KEY_THUMBPRINT, help="RFC 7638 thumbprint of the signing key to trust"
    )
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    with Client(api_key=args.api_key, base_url=args.base_url) as client:
        state_file = os.path.join(args.dir, "state.json")
        if os.path.exists(state_file):
            with open(state_file, encoding="utf-8") as state:
                since = json.load(state)["dataset_version"]
            changes = changes_since(client, since)
            if changes == []:
                print(f"up to date: nothing changed since {since}")
                return
            if changes:
                kinds: dict[str, int] = {}
                for change in changes:
                    for kind in change.changes:
                        kinds[kind] = kinds.get(kind, 0) + 1
                print(
                    f"{len(changes)} companies changed since {since} ({json.dumps(kinds, sort_keys=True)}); "
                    f"downloading the new export"
                )
        mirror(client, args.dir, args.break_after, args.trusted_key)


if __name__ == "__main__":
    main()
