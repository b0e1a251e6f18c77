#!/usr/bin/env python3
"""Turn the published public-events table into the builder's source dataset layout.

Usage: python3 snapshots/sample/import_public_events.py PUBLIC_EVENTS_CSV OUT_DIR

Writes OUT_DIR/companies.csv and OUT_DIR/events.csv. Event ids are assigned in the
order of the input rows (e0001, e0002, ...) and are never reassigned: later dataset
versions append rows with new ids, because the event history is append-only.
A company's status is `ipo_completed` once it has an `ipo` or `direct_listing` row.
"""
import csv
import sys

LISTINGS = {"ipo", "direct_listing"}


def main(src, out_dir):
    with open(src, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    companies = {}
    for row in rows:
        company = companies.setdefault(
            row["slug"], {"name": row["name"], "sector": row["sector"], "listed": False}
        )
        if row["event_type"] in LISTINGS:
            company["listed"] = True
    with open(f"{out_dir}/companies.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["slug", "name", "sector", "status"])
        for slug in sorted(companies):
            c = companies[slug]
            writer.writerow([slug, c["name"], c["sector"], "ipo_completed" if c["listed"] else "private"])
    with open(f"{out_dir}/events.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["event_id", "slug", "event_type", "occurred_on", "valuation_usd", "source_url", "note"])
        for n, row in enumerate(rows, start=1):
            writer.writerow([f"e{n:04d}", row["slug"], row["event_type"], row["occurred_on"],
                             row["valuation_usd"], row["source_url"], row["note"]])


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
