"""The CSV form of every route that answers rows, against its JSON, for every company.

With the standard library only (urllib, csv, json, gzip), against a live server and an
enterprise key: every page of the company list (several filters, a search among them), every
company's series at coverage 80 and 95 (whole, and cut to a range), its events, every index's
series at 80 and 95 (whole, and cut to a range) and the constituents of every index on its first,
middle and last day at both coverages, the companies export and the series export at both
coverages (whole, and cut to a range). Each CSV body is parsed by Python's csv module and must
equal its JSON row for row, cell for cell:

* the columns of a company row stand for the JSON fields of the same name, except
  lower_80_usd/upper_80_usd (latest_mark.lower_usd/upper_usd), lower_95_usd/upper_95_usd
  (latest_mark.band_95.*), last_event_* (last_event.*, last_event_source_grade its source_grade),
  outcome_* (outcome.*, outcome_kind its kind) and next_reported_usd
  (latest_mark.next_reported.value_usd, empty when next_reported is null); as_of_date, value_usd,
  confidence and vs_last_event_pct are latest_mark's;
* an event row has every field of its record, the record links (supersedes, superseded_by,
  retracted_by) among them;
* aliases are joined with "; ";
* a number is the text the JSON body has for it (read without converting it), bare;
* null is an empty, unquoted cell; text is quoted, and a text cell starting with = + - @ a tab
  or a carriage return has a ' before it (a number never does).

It also checks the framing (a header row, CRLF line ends, the media type), that meta is in the
X-* headers, that a CSV page's X-Next-Cursor is its JSON page's next_cursor, and that the
exports decode to the same table with and without gzip. Of the indices it checks besides that
the list's first and last days and latest point are the series' (at 80), and that a day's
constituents are as many as the series says, at its level, largest first, weighted by their
marks, each mark and band the company's own series' of that day.

    python tests/live/csv_check.py --base-url URL [--api-key KEY]
"""

import argparse
import csv
import gzip
import io
import json
import sys
import urllib.error
import urllib.parse
import urllib.request

CSV_TYPE = "text/csv; charset=utf-8; header=present"
META_HEADERS = {
    "dataset_version": "X-Dataset-Version",
    "methodology_version": "X-Methodology-Version",
    "as_of": "X-As-Of",
    "data_mode": "X-Data-Mode",
    "provenance": "X-Provenance",
    "disclaimer": "X-Disclaimer",
}
COMPANY_FIELDS = {
    "as_of_date": ("latest_mark", "as_of_date"),
    "value_usd": ("latest_mark", "value_usd"),
    "lower_80_usd": ("latest_mark", "lower_usd"),
    "upper_80_usd": ("latest_mark", "upper_usd"),
    "lower_95_usd": ("latest_mark", "band_95", "lower_usd"),
    "upper_95_usd": ("latest_mark", "band_95", "upper_usd"),
    "confidence": ("latest_mark", "confidence"),
    "vs_last_event_pct": ("latest_mark", "vs_last_event_pct"),
    "last_event_id": ("last_event", "event_id"),
    "last_event_on": ("last_event", "occurred_on"),
    "last_event_type": ("last_event", "event_type"),
    "last_event_usd": ("last_event", "valuation_usd"),
    "outcome_type": ("outcome", "event_type"),
    "outcome_on": ("outcome", "occurred_on"),
    "outcome_usd": ("outcome", "valuation_usd"),
    "outcome_kind": ("outcome", "kind"),
    "last_event_source_grade": ("last_event", "source_grade"),
    "next_reported_usd": ("latest_mark", "next_reported", "value_usd"),
    "mark_is_current": ("latest_mark", "current"),
}
COMPANY_COLUMNS = [
    "slug", "name", "aliases", "sector", "status", "as_of_date", "value_usd", "lower_80_usd",
    "upper_80_usd", "confidence", "vs_last_event_pct", "delta_30d_pct", "last_event_id",
    "last_event_on", "last_event_type", "last_event_usd", "days_since_last_event", "outcome_type",
    "outcome_on", "outcome_usd", "outcome_kind", "last_event_source_grade", "next_reported_usd",
    "mark_is_current", "delta_30d_basis",
]  # fmt: skip
EXPORT_COLUMNS = [*COMPANY_COLUMNS[:9], "lower_95_usd", "upper_95_usd", *COMPANY_COLUMNS[9:]]
SERIES_COLUMNS = ["slug", "date", "mark_usd", "lower_usd", "upper_usd"]
EVENT_COLUMNS = [
    "slug", "event_id", "occurred_on", "event_type", "valuation_usd", "reported_as", "source_url", "source_grade",
    "note", "supersedes", "superseded_by", "retracted_by",
]  # fmt: skip
INDEX_COLUMNS = ["index", "date", "level", "lower", "upper", "constituents"]
CONSTITUENT_COLUMNS = ["index", "date", "slug", "name", "weight", "mark_usd", "lower_usd", "upper_usd", "value_weight"]
TRIGGERS = ("=", "+", "-", "@")


def runs_a_formula(text):
    """OWASP's CSV-injection rule as docs/api.md words it: a cell that starts with a tab or a CR,
    whose first character past blanks (spaces, tabs, CR, LF) is a trigger, or that holds a line
    break with a trigger anywhere after it."""
    if text.startswith(("\t", "\r")) or text.lstrip(" \t\r\n").startswith(TRIGGERS):
        return True
    breaks = [i for i, c in enumerate(text) if c in "\r\n"]
    return bool(breaks) and any(c in TRIGGERS for c in text[breaks[0] :])


class Number(str):
    """A JSON number kept as the text the body has for it."""


def loads(text):
    return json.loads(text, parse_int=Number, parse_float=Number)


class Api:
    def __init__(self, base_url, api_key):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.requests = 0

    def get(self, path, params=None, *, accept="application/json", gzip_ok=False):
        query = "?" + urllib.parse.urlencode(params) if params else ""
        headers = {"X-API-Key": self.api_key, "Accept": accept}
        if gzip_ok:
            headers["Accept-Encoding"] = "gzip"
        request = urllib.request.Request(self.base_url + path + query, headers=headers)
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                body = response.read()
                headers = response.headers
        except urllib.error.HTTPError as error:
            raise AssertionError(f"GET {path}{query} ({accept}): {error.code} {error.read()[:300]!r}") from None
        if headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        else:
            assert headers.get("Content-Encoding") is None, headers.get("Content-Encoding")
        return headers, body

    def json(self, path, params=None):
        headers, body = self.get(path, params)
        assert headers["Content-Type"] == "application/json", headers["Content-Type"]
        return loads(body)

    def ndjson(self, path, params=None, *, gzip_ok=False):
        headers, body = self.get(path, params, accept="application/x-ndjson", gzip_ok=gzip_ok)
        assert headers["Content-Type"] == "application/x-ndjson", headers["Content-Type"]
        return [loads(line) for line in body.split(b"\n") if line.strip()]

    def csv(self, path, params=None, *, gzip_ok=False):
        headers, body = self.get(path, params, accept="text/csv", gzip_ok=gzip_ok)
        assert headers["Content-Type"] == CSV_TYPE, (path, headers["Content-Type"])
        return headers, body


def tokens(line):
    """The cells of one CSV record as (text, quoted): RFC 4180, read by hand to see the quoting."""
    cells, i = [], 0
    while True:
        if line.startswith('"', i):
            i += 1
            text = []
            while True:
                end = line.index('"', i)
                text.append(line[i:end])
                if line.startswith('""', end):
                    text.append('"')
                    i = end + 2
                else:
                    i = end + 1
                    break
            cells.append(("".join(text), True))
        else:
            end = line.find(",", i)
            end = len(line) if end < 0 else end
            cells.append((line[i:end], False))
            i = end
        if i == len(line):
            return cells
        assert line[i] == ",", (line, i)
        i += 1


def records(body):
    """The raw records of a CSV body (split on CRLF outside quotes), every one CRLF-terminated."""
    text = body.decode("utf-8")
    assert text.endswith("\r\n"), "the last record ends with CRLF"
    out, start, quoted = [], 0, False
    for i, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif char == "\n" and not quoted:
            assert text[i - 1] == "\r", f"a bare LF ends record {len(out) + 1}"
            out.append(text[start : i - 1])
            start = i + 1
    return out


def table(body, columns):
    """(header, rows) read by Python's csv module; the rows' quoting checked against a reading by
    hand, returned beside them as one bool per cell."""
    rows = list(csv.reader(io.StringIO(body.decode("utf-8"), newline="")))
    assert rows, "a CSV answer has a header row"
    header, rows = rows[0], rows[1:]
    assert header == columns, header
    raw = records(body)
    assert len(raw) == len(rows) + 1, (len(raw), len(rows))
    assert raw[0] == ",".join(columns), "the header row is the bare column names"
    quoting = []
    for record, row in zip(raw[1:], rows, strict=True):
        cells = tokens(record)
        assert [text for text, _ in cells] == row, (record, row)
        quoting.append([quoted for _, quoted in cells])
    return rows, quoting


def expected_cell(value):
    """A JSON value as its CSV cell: (text, quoted)."""
    if value is None:
        return ("", False)
    if isinstance(value, Number):
        return (str(value), False)
    if isinstance(value, bool):
        return ("true" if value else "false", True)
    if isinstance(value, list):
        value = "; ".join(value)
    assert isinstance(value, str), value
    return ("'" + value if runs_a_formula(value) else value, True)


def company_value(item, column):
    path = COMPANY_FIELDS.get(column, (column,))
    value = item
    for name in path:
        value = None if value is None else value.get(name)
    return value


def compare(rows, quoting, expected, what):
    """``expected`` is a list of lists of JSON values, one list per row."""
    assert len(rows) == len(expected), f"{what}: {len(rows)} CSV rows, {len(expected)} in JSON"
    for n, (row, quoted, values) in enumerate(zip(rows, quoting, expected, strict=True)):
        want = [expected_cell(v) for v in values]
        assert row == [text for text, _ in want], f"{what} row {n + 1}: {row} != {want}"
        assert quoted == [q for _, q in want], f"{what} row {n + 1}: quoting {quoted} != {want}"


def company_rows(items, columns):
    return [[company_value(item, column) for column in columns] for item in items]


def series_rows(slug, points):
    return [[slug, p["date"], p["mark_usd"], p["lower_usd"], p["upper_usd"]] for p in points]


def check_meta(headers, meta, what):
    for field, header in META_HEADERS.items():
        assert headers.get(header) == meta[field], f"{what}: {header} {headers.get(header)!r} != {meta[field]!r}"


def check_vary(headers, what):
    vary = [part.strip() for part in headers.get("Vary", "").split(",")]
    assert vary[:2] == ["X-API-Key", "Accept"], f"{what}: Vary {headers.get('Vary')!r}"


def check_list(api, params):
    what = f"the list {params}"
    json_cursor = csv_cursor = None
    pages = items = 0
    while True:
        query = {**params, "limit": 50}
        page = api.json("/v1/companies", {**query, **({"cursor": json_cursor} if json_cursor else {})})
        headers, body = api.csv("/v1/companies", {**query, **({"cursor": csv_cursor} if csv_cursor else {})})
        check_vary(headers, what)
        check_meta(headers, page["meta"], what)
        rows, quoting = table(body, COMPANY_COLUMNS)
        compare(rows, quoting, company_rows(page["companies"], COMPANY_COLUMNS), f"{what} page {pages + 1}")
        json_cursor, csv_cursor = page["page"]["next_cursor"], headers.get("X-Next-Cursor")
        assert csv_cursor == json_cursor, f"{what}: X-Next-Cursor {csv_cursor!r} != {json_cursor!r}"
        pages += 1
        items += len(rows)
        if json_cursor is None:
            return pages, items


def check_company(api, slug):
    for coverage in ("80", "95"):
        path = f"/v1/companies/{slug}/marks"
        series = api.json(path, {"coverage": coverage})
        headers, body = api.csv(path, {"coverage": coverage})
        check_meta(headers, series["meta"], path)
        check_vary(headers, path)
        rows, quoting = table(body, SERIES_COLUMNS)
        compare(rows, quoting, series_rows(slug, series["series"]), f"{path}?coverage={coverage}")
        if coverage == "95" and series["series"]:
            dates = [p["date"] for p in series["series"]]
            start, end = dates[len(dates) // 3], dates[2 * len(dates) // 3]
            cut = [p for p in series["series"] if start <= p["date"] <= end]
            params = {"coverage": coverage, "from": start, "to": end}
            ranged = api.json(path, params)
            assert ranged["series"] == cut, f"{path} {params}: the range is not the cut of the series"
            headers, body = api.csv(path, params)
            rows, quoting = table(body, SERIES_COLUMNS)
            compare(rows, quoting, series_rows(slug, cut), f"{path} {params}")
    path = f"/v1/companies/{slug}/events"
    events = api.json(path)
    headers, body = api.csv(path)
    check_meta(headers, events["meta"], path)
    check_vary(headers, path)
    rows, quoting = table(body, EVENT_COLUMNS)
    expected = [[slug] + [event[column] for column in EVENT_COLUMNS[1:]] for event in events["events"]]
    compare(rows, quoting, expected, path)
    return len(events["events"])


def index_rows(index, points):
    return [[index] + [p[column] for column in INDEX_COLUMNS[1:]] for p in points]


def check_constituents(api, index, point, coverage):
    """The constituents of ``index`` on ``point``'s day, CSV against JSON, and against the day of
    the index's series and each company's own series."""
    day = point["date"]
    path = f"/v1/indices/{index}/constituents"
    params = {"date": day, "coverage": coverage}
    body = api.json(path, params)
    what = f"{path} {params}"
    assert (body["index"], body["date"], str(body["coverage"])) == (index, day, coverage), what
    assert body["level"] == point["level"], f"{what}: level {body['level']} != the series' {point['level']}"
    members = body["constituents"]
    assert len(members) == int(point["constituents"]), f"{what}: {len(members)} != {point['constituents']}"
    headers, csv_body = api.csv(path, params)
    check_meta(headers, body["meta"], what)
    check_vary(headers, what)
    rows, quoting = table(csv_body, CONSTITUENT_COLUMNS)
    expected = [[index, day] + [m[column] for column in CONSTITUENT_COLUMNS[2:]] for m in members]
    compare(rows, quoting, expected, what)
    # Largest mark first (ties by slug), weighted by the marks capped at 10% (1/n below ten
    # constituents), each the company's own of the day.
    order = [(-int(m["mark_usd"]), m["slug"]) for m in members]
    assert order == sorted(order), f"{what}: not largest first"
    total = sum(int(m["mark_usd"]) for m in members)
    cap = max(0.1, 1 / len(members))
    assert abs(sum(float(m["weight"]) for m in members) - 1) <= 1e-5, what
    for m in members:
        assert abs(float(m["value_weight"]) - int(m["mark_usd"]) / total) <= 5e-7, (what, m)
        assert float(m["weight"]) <= cap + 1e-6, (what, m)
        own = api.json(f"/v1/companies/{m['slug']}/marks", {"coverage": coverage, "from": day, "to": day})
        assert len(own["series"]) == 1, (what, m["slug"])
        mark = own["series"][0]
        assert [m[c] for c in ("mark_usd", "lower_usd", "upper_usd")] == [
            mark[c] for c in ("mark_usd", "lower_usd", "upper_usd")
        ], f"{what}: {m['slug']} is not its own series' {mark}"
    return len(members)


def check_indices(api):
    listed = api.json("/v1/indices")
    indices = listed["indices"]
    assert indices and indices[0]["index"] == "all", [i["index"] for i in indices]
    days = members = 0
    for item in indices:
        index = item["index"]
        path = f"/v1/indices/{index}"
        for coverage in ("80", "95"):
            series = api.json(path, {"coverage": coverage})
            points = series["series"]
            assert points, f"{path}: no days"
            headers, body = api.csv(path, {"coverage": coverage})
            check_meta(headers, series["meta"], path)
            check_vary(headers, path)
            rows, quoting = table(body, INDEX_COLUMNS)
            compare(rows, quoting, index_rows(index, points), f"{path}?coverage={coverage}")
            days += len(points)
            if coverage == "80":
                assert (item["first_date"], item["last_date"]) == (points[0]["date"], points[-1]["date"]), index
                assert item["latest"] == points[-1], f"{index}: latest {item['latest']} != {points[-1]}"
                assert points[0]["level"] == listed["base_level"], f"{index} does not start at the base level"
            start, end = points[len(points) // 3]["date"], points[2 * len(points) // 3]["date"]
            cut = [p for p in points if start <= p["date"] <= end]
            params = {"coverage": coverage, "from": start, "to": end}
            assert api.json(path, params)["series"] == cut, f"{path} {params}: the range is not the cut"
            headers, body = api.csv(path, params)
            rows, quoting = table(body, INDEX_COLUMNS)
            compare(rows, quoting, index_rows(index, cut), f"{path} {params}")
            # Constituents on the first, middle and last day (every index at 80, the first two at 95).
            if coverage == "80" or index in ("all", indices[1]["index"]):
                for point in (points[0], points[len(points) // 2], points[-1]):
                    members += check_constituents(api, index, point, coverage)
        last = api.json(f"/v1/indices/{index}/constituents")
        assert last["date"] == item["last_date"] and str(last["coverage"]) == "80", (index, last["date"])
    return len(indices), days, members


def check_exports(api, companies):
    lines = api.ndjson("/v1/export", gzip_ok=True)
    assert lines[0]["export"] == "companies", lines[0]
    assert int(lines[0]["companies"]) == len(lines) - 1 == companies, (lines[0]["companies"], len(lines))
    for gzip_ok in (True, False):
        headers, body = api.csv("/v1/export", gzip_ok=gzip_ok)
        check_meta(headers, lines[0]["meta"], "/v1/export")
        rows, quoting = table(body, EXPORT_COLUMNS)
        compare(rows, quoting, company_rows(lines[1:], EXPORT_COLUMNS), f"/v1/export (gzip {gzip_ok})")
    points = {}
    for coverage in ("80", "95"):
        lines = api.ndjson("/v1/export/series", {"coverage": coverage}, gzip_ok=True)
        assert lines[0]["export"] == "series" and lines[0]["coverage"] == coverage, lines[0]
        expected = [row for line in lines[1:] for row in series_rows(line["slug"], line["series"])]
        for gzip_ok in (True, False):
            headers, body = api.csv("/v1/export/series", {"coverage": coverage}, gzip_ok=gzip_ok)
            check_meta(headers, lines[0]["meta"], "/v1/export/series")
            rows, quoting = table(body, SERIES_COLUMNS)
            compare(rows, quoting, expected, f"/v1/export/series?coverage={coverage} (gzip {gzip_ok})")
        points[coverage] = len(expected)
        # Cut to a range: every company's line, its series cut; the CSV its rows in the range.
        start, end = "2024-06-01", "2024-06-30"
        params = {"coverage": coverage, "from": start, "to": end}
        ranged = api.ndjson("/v1/export/series", params, gzip_ok=True)
        assert (ranged[0]["from"], ranged[0]["to"]) == (start, end), ranged[0]
        assert [line["slug"] for line in ranged[1:]] == [line["slug"] for line in lines[1:]]
        cut = [[p for p in line["series"] if start <= p["date"] <= end] for line in lines[1:]]
        assert [line["series"] for line in ranged[1:]] == cut, f"the ranged export {params} is not the cut"
        headers, body = api.csv("/v1/export/series", params, gzip_ok=True)
        assert headers.get("Content-Encoding") is None and headers.get("Accept-Ranges") is None
        rows, quoting = table(body, SERIES_COLUMNS)
        expected = [row for line in ranged[1:] for row in series_rows(line["slug"], line["series"])]
        compare(rows, quoting, expected, f"/v1/export/series {params}")
    return points


def self_test():
    """The reading and the expectations on a table no sample holds: quotes, commas, line breaks
    and formulas in cells."""
    body = b'slug,date,mark_usd,lower_usd,upper_usd\r\n"a ""b"", c","\'=1+2",-3.5,,"x\r\ny"\r\n'
    rows, quoting = table(body, SERIES_COLUMNS)
    assert rows == [['a "b", c', "'=1+2", "-3.5", "", "x\r\ny"]], rows
    assert quoting == [[True, True, False, False, True]], quoting
    compare(rows, quoting, [['a "b", c', "=1+2", Number("-3.5"), None, "x\r\ny"]], "self-test")
    assert expected_cell(["+cmd", "@SUM(A1)"]) == ("'+cmd; @SUM(A1)", True)
    assert expected_cell([]) == ("", True) and expected_cell(loads("-0.0")) == ("-0.0", False)


def main():
    self_test()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", default="vmk_demo_enterprise", help="an enterprise key")
    args = parser.parse_args()
    api = Api(args.base_url, args.api_key)

    everyone = []
    for params in ({}, {"sort": "-value_usd"}, {"q": "a", "status": "private"}, {"q": "cursor"}, {"sector": "Fintech"}):
        pages, items = check_list(api, params)
        print(f"ok: the list {params}: {items} rows over {pages} pages equal the JSON", flush=True)
        if not params:
            cursor = None
            while True:  # every page: the dataset may hold more companies than a page
                page = api.json("/v1/companies", {"limit": 200, **({"cursor": cursor} if cursor else {})})
                everyone += [item["slug"] for item in page["companies"]]
                cursor = page["page"]["next_cursor"]
                if not cursor:
                    break
            assert len(everyone) == items
    events = 0
    for slug in everyone:
        events += check_company(api, slug)
    print(
        f"ok: {len(everyone)} companies: series at 80 and 95 (whole and a third cut out by from/to) "
        f"and {events} events equal their JSON",
        flush=True,
    )
    indices, days, members = check_indices(api)
    print(
        f"ok: {indices} indices: {days} days at 80 and 95 (whole and a third cut out by from/to) and "
        f"{members} constituents on three days of each equal their JSON, the series and the companies' own marks",
        flush=True,
    )
    points = check_exports(api, len(everyone))
    print(
        f"ok: the exports: {len(everyone)} company rows, {points['80']} series rows at 80 and {points['95']} "
        "at 95 (gzip and not) and a range at each equal their NDJSON",
        flush=True,
    )
    print(f"csv check passed ({api.requests} requests)")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as error:
        print(f"csv check FAILED: {error}", file=sys.stderr)
        sys.exit(1)
