#!/usr/bin/env python3
"""Turn the published public-events table into the builder's source dataset layout.

Usage: python3 sample/import_public_events.py PUBLIC_EVENTS_CSV OUT_DIR

Writes OUT_DIR/companies.csv and OUT_DIR/events.csv. Event ids are never reassigned, because
the event history is append-only: a row already in OUT_DIR/events.csv (same slug, type, date,
value and source) keeps its id and its place, and rows new to the table are appended after
them with the next ids (e0001, e0002, ... in the order of the input rows). A company's status
is `ipo_completed` once it has an `ipo` or `direct_listing` row; a `bankruptcy` row leaves it
as it is (SPEC knows only `private` and `ipo_completed`).

A company's aliases (the names search also finds it by) are the part of its name in brackets
("Anysphere (Cursor)" is also Cursor) and any name a note says it then had ("company then
named Codeium"), in the order first seen, separated by `;`.
"""

import csv
import os
import re
import sys

LISTINGS = {"ipo", "direct_listing"}
COLUMNS = ["event_id", "slug", "event_type", "occurred_on", "valuation_usd", "source_url", "note"]


BRACKETED = re.compile(r"\(([^()]+)\)")
THEN_NAMED = re.compile(r"(?:then|formerly) named ([A-Z][\w.&' -]*?)(?=[);,]|$)")


def aliases_of(name, notes):
    found = [m.strip() for m in BRACKETED.findall(name)]
    for note in notes:
        found += [m.strip() for m in THEN_NAMED.findall(note)]
    unique = []
    for alias in found:
        if alias and alias.lower() not in (a.lower() for a in unique):
            unique.append(alias)
    return unique


def identity(row):
    return (row["slug"], row["event_type"], row["occurred_on"], row["valuation_usd"], row["source_url"])


def main(src, out_dir):
    with open(src, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    companies = {}
    for row in rows:
        company = companies.setdefault(
            row["slug"], {"name": row["name"], "sector": row["sector"], "listed": False, "notes": []}
        )
        company["notes"].append(row["note"])
        if row["event_type"] in LISTINGS:
            company["listed"] = True
    with open(f"{out_dir}/companies.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["slug", "name", "sector", "status", "aliases"])
        for slug in sorted(companies):
            c = companies[slug]
            status = "ipo_completed" if c["listed"] else "private"
            aliases = ";".join(aliases_of(c["name"], c["notes"]))
            writer.writerow([slug, c["name"], c["sector"], status, aliases])
    events_path = f"{out_dir}/events.csv"
    existing = []
    if os.path.exists(events_path):
        with open(events_path, newline="", encoding="utf-8") as fh:
            existing = list(csv.DictReader(fh))
    known = {identity(row) for row in existing}
    numbers = [int(row["event_id"][1:]) for row in existing if row["event_id"][1:].isdigit()]
    next_number = max(numbers, default=0) + 1
    appended = []
    for row in rows:
        if identity(row) in known:
            continue
        appended.append(dict(row, event_id=f"e{next_number:04d}"))
        next_number += 1
    with open(events_path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in existing + appended:
            writer.writerow([row[c] for c in COLUMNS])


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
