#!/usr/bin/env python3
"""Import a version of the public-events table onto the bundled sample (DESIGN section 2).

Usage: python3 sample/import_public_events.py PUBLIC_EVENTS_CSV SAMPLE_DIR
           [--retractions RETRACTIONS_CSV] [--dataset-version YYYY-MM-DD --as-of YYYY-MM-DD]

The sample's event history is append-only, so the import never edits or removes a record:
- Existing records keep their ids and their order.
- A table row whose `supersedes` is empty and whose `slug, event_type, occurred_on,
  valuation_usd, source_url` equal a record's IS that record: its `reported_as` and
  `source_grade` are filled in where they are empty, and nothing else of it changes. (A row
  with a `supersedes` is a record already imported only if that record has the same five
  fields and the same `supersedes`.)
- Every other row is appended in file order with the next id (the number after the last
  record's: e0481, ...), carrying its `supersedes`, which must name an earlier record of the
  same company. A new id that is already taken (the ids are out of order) is refused.
- Then every line of RETRACTIONS_CSV (`event_id,slug,reason`; by default retractions.csv
  beside the table) not yet applied is appended as a `retraction` record: `supersedes` the
  named event, dated the dataset's `as_of`, valuation 0, the reason as its note, and
  `reported_as`, `source_url` and `source_grade` empty (a withdrawal reports no value and has
  no page of its own), so the builder must accept those three empty for a retraction.
Run twice, the import appends nothing and leaves every file byte-identical.

companies.csv keeps its rows (a name or sector the table spells otherwise is only reported) and
gains every company a record names that it lacks, with the table's name and sector; the file
stays sorted by slug. A company's
`status` is `ipo_completed` once it has a closed listing (`ipo`, `direct_listing`,
`spac_listing` reported `closed`; one `announced` is an agreed deal, one `in_talks` a filing) in
the effective view (records that a later record supersedes or a retraction withdraws left out),
else `private`. Its aliases, the names search also finds it by, are the part of its name in
brackets ("Anysphere (Cursor)" is also Cursor; a `;` there separates two names) and any name a
note says it then had ("company then named Codeium"), in the order first seen, joined by `;`;
a known alias is never dropped, and a bracketed place ("Bolt (Estonia)") is no alias. A brand
a company is known by that its name does not carry (TikTok for ByteDance) comes from
`aliases.csv` beside companies.csv (`slug,alias,evidence`): the alias must appear in the note or
the source address of the evidence record, one of that company's events, or it is refused.

Each row's `reported_as` is one its event type takes (data v6: a fund mark or an internal
valuation is an `estimate`, a buyback `closed`; DESIGN section 2), as the builder checks it.
companies.csv also carries each company's `domain` and `ticker` (data v6), from
`identifiers.csv` beside it (`slug,domain,ticker,source_url,quote`), each read on a page: the
domain is the host of the page's address or written in its quote (a bare lower-case host, no
`www.`, one company's), the ticker is `EXCHANGE:SYMBOL` with the symbol written in the quote,
and only a company with a closed listing has one.

--dataset-version and --as-of rewrite just those lines of dataset.toml. Bad input is refused
with `file:line: what is wrong` and exit status 1, before any file is written.
"""

import argparse
import csv
import os
import re
import sys
from datetime import date

COLUMNS = [
    "event_id",
    "slug",
    "event_type",
    "occurred_on",
    "valuation_usd",
    "reported_as",
    "source_url",
    "source_grade",
    "note",
    "supersedes",
]
NEW_COLUMNS = {"reported_as", "source_grade", "supersedes"}  # the events.csv of v3 lacks them
COMPANY_COLUMNS = ["slug", "name", "sector", "status", "aliases", "domain", "ticker"]
IDENTIFIER_COLUMNS = {"domain", "ticker"}  # data v6; a companies.csv of v5 lacks them
TABLE_COLUMNS = ["slug", "name", "sector", *COLUMNS[2:]]
IDENTITY = ["slug", "event_type", "occurred_on", "valuation_usd", "source_url"]
LISTINGS = {"ipo", "direct_listing", "spac_listing"}
ROUNDS = {"primary_round", "down_round", "tender_offer", "secondary_sale"}
# The reported_as each event type takes (DESIGN section 2, as the builder checks it); an empty
# one, on records older than the column, reads as closed.
REPORTED_AS = {
    **{kind: frozenset({"closed", "announced", "estimate", "in_talks"}) for kind in ROUNDS},
    **{kind: frozenset({"estimate"}) for kind in ("fund_mark", "internal_valuation")},
    **{kind: frozenset({"closed"}) for kind in ("buyback", "acquisition_closed", "acquisition_terminated")},
    "acquisition": frozenset({"announced", "closed", "in_talks"}),
    **{kind: frozenset({"closed", "announced", "in_talks"}) for kind in LISTINGS},
    **{kind: frozenset({"closed", "announced"}) for kind in ("bankruptcy", "wind_down")},
}
SECTORS = {"ai", "fintech", "space", "enterprise-software", "consumer", "crypto", "defense", "healthcare"} | {
    "mobility",
    "gaming",
    "developer-tools",
    "climate-energy",
    "other",
}
ALLOWED = {
    "sector": SECTORS,
    "event_type": set(REPORTED_AS),
    "reported_as": {"closed", "announced", "in_talks", "estimate"},
    "source_grade": {"A", "B", "C", "D"},
}
# companies.csv's identifiers (DESIGN section 2): a bare lower-case host, and EXCHANGE:SYMBOL.
DOMAIN = re.compile(r"(?!www\.)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
TICKER = re.compile(r"([A-Z][A-Z0-9]{1,9}):([A-Z0-9][A-Z0-9.-]{0,14})")
# Bracketed words that tell two companies of one name apart rather than name one.
NOT_NAMES = {"Estonia"}
BRACKETED = re.compile(r"\(([^()]+)\)")
THEN_NAMED = re.compile(r"(?:then|formerly) named ([A-Z][\w.&' -]*?)(?=[);,]|$)")


class Refusal(Exception):
    """Bad input, reported as `file:line: what is wrong`."""


def read_csv(path, required):
    """The rows of a CSV file, each with the line it starts on, after checking its header."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            if missing:
                raise Refusal(f"{path}:1: missing column {', '.join(missing)}")
            rows, line = [], reader.line_num + 1
            for row in reader:
                rows.append((line, row))
                line = reader.line_num + 1
            return rows
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise Refusal(f"{path}: cannot read it: {err}") from None


def aliases_of(name, notes, known=()):
    found = list(known) + [p for m in BRACKETED.findall(name) for p in m.split(";")]
    found += [m for note in notes for m in THEN_NAMED.findall(note)]
    unique = []
    for alias in (a.strip() for a in found):
        if alias and alias not in NOT_NAMES and alias.lower() not in (a.lower() for a in unique):
            unique.append(alias)
    return unique


def key(record, with_supersedes):
    return tuple(record[c] for c in IDENTITY) + ((record["supersedes"],) if with_supersedes else ())


def import_events(events, table, table_path, retractions, retractions_path, as_of):
    """Fill in and append to `events` (a list of records) in place; returns what was done."""
    by_id = {r["event_id"]: r for r in events}
    numbers = [int(m[1]) for r in events if (m := re.fullmatch(r"e(\d+)", r["event_id"]))]
    next_number = numbers[-1] + 1 if numbers else 1
    matches = {key(r, False): r for r in events} | {key(r, True): r for r in events}
    done = {"matched": 0, "filled": 0, "appended": 0, "retractions": 0}

    def append(record, where):
        nonlocal next_number
        record["event_id"] = f"e{next_number:04d}"
        if record["event_id"] in by_id:
            raise Refusal(f"{where}: its new id {record['event_id']} is already taken")
        next_number += 1
        events.append(record)
        by_id[record["event_id"]] = record

    for line, row in table:
        where = f"{table_path}:{line}"
        for column, allowed in ALLOWED.items():
            if row[column] not in allowed:
                raise Refusal(f"{where}: unknown {column} {row[column]!r}")
        if (row["reported_as"] or "closed") not in REPORTED_AS[row["event_type"]]:
            takes = ", ".join(sorted(REPORTED_AS[row["event_type"]]))
            raise Refusal(f"{where}: a {row['event_type']} is reported as one of {takes}, not {row['reported_as']!r}")
        record = {c: row[c] for c in COLUMNS[1:]}
        match = matches.get(key(record, bool(record["supersedes"])))
        if match:
            empty = [c for c in ("reported_as", "source_grade") if not match[c]]
            match.update({c: record[c] for c in empty})
            done["matched"] += 1
            done["filled"] += bool(empty)
            continue
        old = by_id.get(record["supersedes"])
        if record["supersedes"] and (not old or old["slug"] != record["slug"]):
            raise Refusal(f"{where}: supersedes {record['supersedes']}, which is no event of {record['slug']}")
        append(record, where)
        matches[key(record, False)] = matches[key(record, True)] = record
        done["appended"] += 1

    withdrawn = {r["supersedes"] for r in events if r["event_type"] == "retraction"}
    for line, row in retractions:
        where = f"{retractions_path}:{line}"
        old = by_id.get(row["event_id"])
        if not old or old["slug"] != row["slug"] or old["event_type"] == "retraction":
            raise Refusal(f"{where}: retracts {row['event_id']}, which is no event of {row['slug']}")
        if not row["reason"].strip():
            raise Refusal(f"{where}: the retraction of {row['event_id']} gives no reason")
        if row["event_id"] in withdrawn:
            continue
        record = dict.fromkeys(COLUMNS, "") | {"slug": row["slug"], "event_type": "retraction"}
        record |= {"occurred_on": as_of, "valuation_usd": "0", "note": row["reason"], "supersedes": row["event_id"]}
        append(record, where)
        withdrawn.add(row["event_id"])
        done["retractions"] += 1
    return done


def update_companies(companies, events, table, table_path):
    """Add the companies `events` name and `companies` lacks; set every status and alias list."""
    from_table = {}
    for line, row in table:
        first = from_table.setdefault(row["slug"], (row["name"], row["sector"], line))
        if first[:2] != (row["name"], row["sector"]):
            raise Refusal(f"{table_path}:{line}: {row['slug']} has another name or sector than on line {first[2]}")
    for slug, (name, sector, _) in from_table.items():
        if slug in companies and (companies[slug]["name"], companies[slug]["sector"]) != (name, sector):
            c = companies[slug]
            print(
                f"note: {slug} keeps {c['name']!r} ({c['sector']}); the table has {name!r} ({sector})", file=sys.stderr
            )
    gone = {r["supersedes"] for r in events if r["supersedes"]}
    # A listing ends the private period once it closed: one announced (a SPAC merger signed) or
    # in talks (a filing) does not.
    listed = {
        r["slug"]
        for r in events
        if r["event_type"] in LISTINGS and r["reported_as"] in ("", "closed") and r["event_id"] not in gone
    }
    notes = {}
    for r in events:
        if r["event_type"] != "retraction":
            notes.setdefault(r["slug"], []).append(r["note"])
    new = 0
    for slug in sorted(set(notes) - set(companies)):
        name, sector, _ = from_table[slug]
        companies[slug] = {"slug": slug, "name": name, "sector": sector, "aliases": "", "domain": "", "ticker": ""}
        new += 1
    for slug, c in companies.items():
        c["status"] = "ipo_completed" if slug in listed else "private"
        c["aliases"] = ";".join(aliases_of(c["name"], notes.get(slug, []), c["aliases"].split(";")))
    return new


def add_evidenced_aliases(companies, events, path):
    """The brands of aliases.csv, each checked against the record it names as evidence."""
    if not os.path.exists(path):
        return
    by_id = {r["event_id"]: r for r in events}
    squeeze = lambda text: re.sub(r"[^a-z0-9]", "", text.lower())  # noqa: E731
    for line, row in read_csv(path, ["slug", "alias", "evidence"]):
        slug, alias, evidence = row["slug"], row["alias"].strip(), by_id.get(row["evidence"])
        if slug not in companies:
            raise Refusal(f"{path}:{line}: unknown slug {slug}")
        if evidence is None or evidence["slug"] != slug:
            raise Refusal(f"{path}:{line}: evidence {row['evidence']} is not an event of {slug}")
        if not alias or squeeze(alias) not in squeeze(evidence["note"] + " " + evidence["source_url"]):
            raise Refusal(f"{path}:{line}: {alias!r} is not in the note or source of {row['evidence']}")
        known = [a for a in companies[slug]["aliases"].split(";") if a]
        if alias.lower() not in (a.lower() for a in known):
            companies[slug]["aliases"] = ";".join([*known, alias])


def domain_shown(domain, url, quote):
    """Whether a page shows a company's domain: it is the page's host (or the host is under it),
    or the quote writes it."""
    host = re.sub(r"^https?://(www\.)?", "", url).split("/")[0].split(":")[0].rstrip(".").lower()
    return host == domain or host.endswith("." + domain) or domain in re.sub(r"[^a-z0-9.]", "", quote.lower())


def ticker_shown(symbol, quote):
    """Whether a quote writes a ticker's symbol: as a word in any case, or as the exchange writes
    it (a filing's table runs cells together: "per shareHOODThe Nasdaq")."""
    bounded = rf"(?<![A-Za-z0-9]){re.escape(symbol)}(?![A-Za-z0-9])"
    return bool(re.search(bounded, quote, re.IGNORECASE)) or symbol in quote


def set_identifiers(companies, path):
    """The domains and tickers of identifiers.csv (`slug,domain,ticker,source_url,quote`), each
    from a page that was read: the domain is the host of its address or written in its quote, the
    ticker's symbol is written in its quote, and only a listed company has a ticker."""
    if not os.path.exists(path):
        return
    owner = {c["domain"]: slug for slug, c in companies.items() if c.get("domain")}
    for line, row in read_csv(path, ["slug", "domain", "ticker", "source_url", "quote"]):
        where = f"{path}:{line}"
        slug, domain, ticker, quote = row["slug"], row["domain"], row["ticker"], row["quote"]
        if slug not in companies:
            raise Refusal(f"{where}: unknown slug {slug}")
        if not row["source_url"].startswith(("https://", "http://")) or not quote.strip():
            raise Refusal(f"{where}: an identifier needs the page it was read on and a quote from it")
        if domain:
            if not DOMAIN.fullmatch(domain):
                raise Refusal(f"{where}: domain {domain!r} is not a bare lower-case host without www.")
            if not domain_shown(domain, row["source_url"], quote):
                raise Refusal(f"{where}: {domain} is neither the host of {row['source_url']} nor in the quote")
            if owner.get(domain, slug) != slug:
                raise Refusal(f"{where}: domain {domain} is already {owner[domain]}'s")
            owner[domain] = slug
            companies[slug]["domain"] = domain
        if ticker:
            match = TICKER.fullmatch(ticker)
            if not match:
                raise Refusal(f"{where}: ticker {ticker!r} is not EXCHANGE:SYMBOL (NASDAQ:ABNB)")
            if not ticker_shown(match[2], quote):
                raise Refusal(f"{where}: the symbol {match[2]} is not in the quote")
            if companies[slug]["status"] != "ipo_completed":
                raise Refusal(f"{where}: {slug} has no closed listing, so no ticker")
            companies[slug]["ticker"] = ticker


def write_csv(path, columns, rows):
    with open(f"{path}.tmp", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([row.get(c, "") for c in columns] for row in rows)
    os.replace(f"{path}.tmp", path)


def run(args):
    table_path = args.public_events
    table = read_csv(table_path, TABLE_COLUMNS)
    retractions_path = args.retractions or os.path.join(os.path.dirname(table_path), "retractions.csv")
    retractions = []
    if args.retractions or os.path.exists(retractions_path):
        retractions = read_csv(retractions_path, ["event_id", "slug", "reason"])

    toml_path = os.path.join(args.sample_dir, "dataset.toml")
    try:
        with open(toml_path, encoding="utf-8") as fh:
            toml = fh.read().splitlines(keepends=True)
    except OSError as err:
        raise Refusal(f"{toml_path}: cannot read it: {err}") from None
    values = {"dataset_version": args.dataset_version, "as_of": args.as_of}
    for name, value in values.items():
        lines = [i for i, text in enumerate(toml) if re.match(rf'{name} = "\d{{4}}-\d\d-\d\d"$', text.strip())]
        if not lines:
            raise Refusal(f'{toml_path}: no line {name} = "YYYY-MM-DD"')
        if value is None:
            values[name] = toml[lines[0]].strip().split('"')[1]
        else:
            toml[lines[0]] = f'{name} = "{value}"\n'

    events_path = os.path.join(args.sample_dir, "events.csv")
    events, ids = [], set()
    for line, row in read_csv(events_path, [c for c in COLUMNS if c not in NEW_COLUMNS]):
        if row["event_id"] in ids:
            raise Refusal(f"{events_path}:{line}: duplicate event_id {row['event_id']}")
        ids.add(row["event_id"])
        events.append(dict.fromkeys(COLUMNS, "") | row)
    companies_path = os.path.join(args.sample_dir, "companies.csv")
    required = [c for c in COMPANY_COLUMNS if c not in IDENTIFIER_COLUMNS]
    companies = {r["slug"]: dict.fromkeys(COMPANY_COLUMNS, "") | r for _, r in read_csv(companies_path, required)}
    kept = len(events)
    done = import_events(events, table, table_path, retractions, retractions_path, values["as_of"])
    new = update_companies(companies, events, table, table_path)
    add_evidenced_aliases(companies, events, os.path.join(args.sample_dir, "aliases.csv"))
    set_identifiers(companies, os.path.join(args.sample_dir, "identifiers.csv"))

    write_csv(events_path, COLUMNS, events)
    write_csv(companies_path, COMPANY_COLUMNS, [companies[s] for s in sorted(companies)])
    with open(f"{toml_path}.tmp", "w", encoding="utf-8") as fh:
        fh.writelines(toml)
    os.replace(f"{toml_path}.tmp", toml_path)
    listed = sum(c["status"] == "ipo_completed" for c in companies.values())
    print(
        f"events: {kept} kept, {done['matched']} of them matched ({done['filled']} filled in), "
        f"{done['appended']} rows and {done['retractions']} retractions appended, {len(events)} in all; "
        f"companies: {len(companies)}, {new} new, {listed} ipo_completed"
    )


def day(text):
    if not re.fullmatch(r"\d{4}-\d\d-\d\d", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a date YYYY-MM-DD")
    try:
        date.fromisoformat(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r}: {err}") from None
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("public_events", metavar="PUBLIC_EVENTS_CSV")
    parser.add_argument("sample_dir", metavar="SAMPLE_DIR")
    parser.add_argument("--retractions", metavar="RETRACTIONS_CSV")
    parser.add_argument("--dataset-version", type=day, metavar="YYYY-MM-DD")
    parser.add_argument("--as-of", type=day, metavar="YYYY-MM-DD")
    try:
        run(parser.parse_args())
    except Refusal as refusal:
        sys.exit(str(refusal))


if __name__ == "__main__":
    main()
