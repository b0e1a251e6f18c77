#!/usr/bin/env python3
"""Land the rows collected for data v6 (sample/data/collected/) in the bundled sample.

Usage: python3 sample/land_collected.py [--through STEP] [SHARED_DATA_DIR]
       (SHARED_DATA_DIR defaults to ../shared/data; STEP 1 to 4, 4 by default)

Every step goes through sample/import_public_events.py, so the sample's history stays append-only
and a second run appends nothing. In order:
1. the fates and re-typings (`fates/`, with its retractions) and the re-sourced anchors
   (`resource/`, `resource2/`): corrections of sample records, each naming the one it supersedes;
   the identifiers (`*/identifiers.tsv`) of every company landed, with their pages;
2. the leads: SHARED_DATA_DIR/leads/unicorn_list.csv as it is (the list as the source, grade D),
   except that a "listed as 1+" row, a floor of $1B rather than a valuation, is an `estimate`;
3. the lead companies verified on pages (`leads/`): a row whose `supersedes` names a lead row as
   `L:<slug>:<event_type>:<occurred_on>` corrects the record that lead row became in step 2;
4. the companies collected beyond the list (`newcos/`, `newcos2/`), then the closings of the
   sales they agreed (`closings1/`, `closings2/`).
The tables as imported are written to sample/data/tables/ (the record of what was landed, the
leads' references resolved to event ids), the quotes of every collected row to
sample/evidence.tsv, and every identifier, with its page and quote, to sample/identifiers.csv.
A company of SHARED_DATA_DIR/reserved.txt is refused wherever it appears.
"""

import csv
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import import_public_events as importer  # noqa: E402  (the checks the importer applies)

COLLECTED = os.path.join(HERE, "data", "collected")
TABLES = os.path.join(HERE, "data", "tables")
IMPORTER = os.path.join(HERE, "import_public_events.py")
TABLE_COLUMNS = importer.TABLE_COLUMNS
EVIDENCE_COLUMNS = ["slug", "occurred_on", "event_type", "valuation_usd", "source_url", "quote"]
FLOOR = "listed as 1+"
# Collection passes landed with step 4, after the new companies, in this order.
LATER_PASSES = ("newcos2", "closings1", "closings2")


def rows_of(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter=delimiter))


def write(path, columns, rows, delimiter=","):
    with open(f"{path}.tmp", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, columns, delimiter=delimiter, lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(f"{path}.tmp", path)


def run_importer(table, retractions=None):
    command = [sys.executable, IMPORTER, table, HERE]
    if retractions:
        command += ["--retractions", retractions]
    else:
        # No retractions beside a table of the project's own: an empty file says so.
        empty = os.path.join(TABLES, "no-retractions.csv")
        command += ["--retractions", empty]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(done.stderr.strip())
    print(f"{os.path.relpath(table, HERE)}: {done.stdout.strip()}")


def reserved(shared):
    with open(os.path.join(shared, "reserved.txt"), encoding="utf-8") as fh:
        return {line.strip() for line in fh if line.strip() and not line.startswith("#")}


ENDS = {"ipo", "direct_listing", "spac_listing", "acquisition_closed", "bankruptcy", "wind_down"}
VALUES = {"primary_round", "down_round", "tender_offer", "secondary_sale", "fund_mark", "acquisition"}


def ends(rows):
    """The day of each company's first exit among `rows` (a closed listing, a closed sale, a
    failure)."""
    first = {}
    for r in rows:
        if r["event_type"] in ENDS and r["reported_as"] in ("", "closed"):
            first[r["slug"]] = min(first.get(r["slug"], r["occurred_on"]), r["occurred_on"])
    return first


def unmarkable_companies(rows):
    """The companies of `rows` with no reported private value (before their exit, if they have
    one): the builder marks a company from such a value."""
    by_slug = {}
    for row in rows:
        by_slug.setdefault(row["slug"], []).append(row)
    exits = ends(rows)
    unmarkable = {}
    for slug, events in by_slug.items():
        end = exits.get(slug, "9999-12-31")
        valued = (r for r in events if r["event_type"] in VALUES and int(r["valuation_usd"]) > 0)
        if not any(r["occurred_on"] < end for r in valued):
            why = f"no private value reported before its exit of {end}" if slug in exits else "no value reported"
            unmarkable[slug] = why
    return unmarkable


def late_rows(leads, collected):
    """Collected rows dated after the exit a lead row gives their company, which no collected row
    corrects: the list's month-only exit day would put them after the end of the private period,
    so they wait for a page that dates the exit."""
    corrected = {r["supersedes"] for r in collected if r["supersedes"].startswith("L:")}
    standing = [r for r in leads if f"L:{r['slug']}:{r['event_type']}:{r['occurred_on']}" not in corrected]
    lead_exits = ends(standing)
    late = []
    for r in collected:
        end = lead_exits.get(r["slug"])
        if end and r["occurred_on"] > end:
            late.append((r, f"dated after the list's exit day {end}, which no page here corrects"))
    return late


def main():
    args = sys.argv[1:]
    through = 4
    if args[:1] == ["--through"] and len(args) > 1 and args[1] in "1234":
        through, args = int(args[1]), args[2:]
    shared = args[0] if args else os.path.join(HERE, "..", "..", "shared", "data")
    kept_apart = reserved(shared)
    os.makedirs(TABLES, exist_ok=True)
    # The identifiers are written again at the end, once every company they name has landed.
    if os.path.exists(os.path.join(HERE, "identifiers.csv")):
        os.remove(os.path.join(HERE, "identifiers.csv"))
    write(os.path.join(TABLES, "no-retractions.csv"), ["event_id", "slug", "reason"], [])
    columns = list(TABLE_COLUMNS)

    def table(name, rows):
        for row in rows:
            if row["slug"] in kept_apart:
                sys.exit(f"{name}: {row['slug']} is reserved for the independent evaluation: it stays out")
        path = os.path.join(TABLES, name)
        write(path, columns, rows)
        return path

    # 1. Fates, re-typings and re-sourced anchors.
    fates = table("1-fates.csv", rows_of(os.path.join(COLLECTED, "fates", "rows.csv")))
    run_importer(fates, os.path.join(COLLECTED, "fates", "retractions.csv"))
    resourced = [r for part in ("resource", "resource2") for r in rows_of(os.path.join(COLLECTED, part, "rows.csv"))]
    run_importer(table("2-resourced.csv", resourced))

    if through >= 2:
        land_leads(shared, table, through)
    write_evidence_and_identifiers(through)


def land_leads(shared, table, through):
    """Steps 2 to `through` (at most 4): the leads, the verified leads, the new companies."""
    # 2. The leads, as the list has them; a floor of $1B is an estimate, not a valuation. A lead
    # company with no private value before its exit, in the list or on the pages, cannot be
    # marked: it is left out, and said so in left-out.csv.
    leads = rows_of(os.path.join(shared, "leads", "unicorn_list.csv"))
    verified = rows_of(os.path.join(COLLECTED, "leads", "rows.csv"))
    newcos = rows_of(os.path.join(COLLECTED, "newcos", "rows.csv"))
    later = {
        folder: rows_of(os.path.join(COLLECTED, folder, "rows.csv"))
        for folder in LATER_PASSES
        if os.path.exists(os.path.join(COLLECTED, folder, "rows.csv"))
    }
    every_later = [row for rows in later.values() for row in rows]
    unmarkable = unmarkable_companies(leads + verified + newcos + every_later)
    late = late_rows(leads, verified + newcos + every_later)
    write(
        os.path.join(TABLES, "left-out.csv"),
        ["slug", "event_type", "occurred_on", "reason"],
        [{"slug": slug, "reason": why} for slug, why in sorted(unmarkable.items())]
        + [
            {"slug": r["slug"], "event_type": r["event_type"], "occurred_on": r["occurred_on"], "reason": why}
            for r, why in late
        ],
    )
    dropped = {id(r) for r, _ in late}
    leads = [row for row in leads if row["slug"] not in unmarkable]
    verified = [row for row in verified if row["slug"] not in unmarkable and id(row) not in dropped]
    newcos = [row for row in newcos if row["slug"] not in unmarkable and id(row) not in dropped]
    for row in leads:
        if FLOOR in row["note"]:
            row["reported_as"] = "estimate"
    run_importer(table("3-leads.csv", leads))

    if through < 3:
        return
    # 3. The lead companies verified on pages: `L:` references resolved to the records made.
    events = rows_of(os.path.join(HERE, "events.csv"))
    from_list = (e for e in events if "wikipedia.org" in e["source_url"])
    made = {(e["slug"], e["event_type"], e["occurred_on"]): e["event_id"] for e in from_list}
    for row in verified:
        if row["supersedes"].startswith("L:"):
            _, slug, kind, day = row["supersedes"].split(":")
            if (slug, kind, day) not in made:
                sys.exit(f"leads/rows.csv: {row['supersedes']} names no lead record")
            row["supersedes"] = made[(slug, kind, day)]
    run_importer(table("4-leads-verified.csv", verified))

    if through < 4:
        return
    # 4. Companies beyond the list, then the closings of sales the new companies agreed.
    run_importer(table("5-newcos.csv", newcos))
    for number, folder in enumerate(LATER_PASSES, start=6):
        if folder in later:
            rows = [row for row in later[folder] if row["slug"] not in unmarkable and id(row) not in dropped]
            run_importer(table(f"{number}-{folder}.csv", rows))


def write_evidence_and_identifiers(through):
    """The quotes of every collected row landed, and every identifier of a company landed, with
    its page; the identifiers land with one more run of the first table (which appends
    nothing)."""
    landed = {1: ["fates", "resource", "resource2"], 2: [], 3: ["leads"], 4: ["newcos", *LATER_PASSES]}
    folders = sorted(
        f for step in range(1, through + 1) for f in landed[step] if os.path.isdir(os.path.join(COLLECTED, f))
    )
    evidence = []
    for folder in folders:
        path = os.path.join(COLLECTED, folder, "evidence.tsv")
        if os.path.exists(path):
            for row in rows_of(path, "\t"):
                evidence.append(dict(row, source_url=row["url"]))
    write(os.path.join(HERE, "evidence.tsv"), EVIDENCE_COLUMNS, evidence, "\t")
    status = {c["slug"]: c["status"] for c in rows_of(os.path.join(HERE, "companies.csv"))}
    companies = set(status)
    identifiers, seen = [], set()
    for folder in sorted(os.listdir(COLLECTED)):
        path = os.path.join(COLLECTED, folder, "identifiers.tsv")
        if not os.path.exists(path):
            continue
        for row in rows_of(path, "\t"):
            if row["domain"] and not importer.domain_shown(row["domain"], row["url"], row["quote"]):
                # The page proves the ticker, not the domain: the domain waits for its own page.
                print(f"{folder}/identifiers.tsv: {row['slug']}: {row['domain']} not shown on its page, left out")
                row["domain"] = ""
                if not row["ticker"]:
                    continue
            symbol = row["ticker"].partition(":")[2]
            if row["ticker"] and not importer.ticker_shown(symbol, row["quote"]):
                print(f"{folder}/identifiers.tsv: {row['slug']}: {row['ticker']} not shown on its page, left out")
                row["ticker"] = ""
            if row["ticker"] and status.get(row["slug"]) != "ipo_completed":
                print(f"{folder}/identifiers.tsv: {row['slug']}: {row['ticker']}, no closed listing landed, left out")
                row["ticker"] = ""
                if not row["domain"]:
                    continue
            key = (row["slug"], row["domain"], row["ticker"])
            if row["slug"] in companies and key not in seen:
                seen.add(key)
                identifiers.append(dict(row, source_url=row["url"]))
    write(os.path.join(HERE, "identifiers.csv"), ["slug", "domain", "ticker", "source_url", "quote"], identifiers)
    run_importer(os.path.join(TABLES, "1-fates.csv"), os.path.join(COLLECTED, "fates", "retractions.csv"))


if __name__ == "__main__":
    main()
