"""Every record the sample gained from collected pages has its quote, and the quote holds the figure.

Run: python3 -m unittest sample/test_evidence.py (from the repository root).

The records after the fifth sample's last (e1112) that report a value (not a retraction, and not
a lead row, whose source is the list it was copied from) must each have a line in
sample/evidence.tsv with the same slug, day, type, value and address; its quote, copied from the
page, must write the figure (in any common notation: $5.15B, 5,150 million, 7,4 milliards,
86 億) or the record's note must say how the figure was derived (converted, computed, implied,
or written in words on the page). A value of 0 (an undisclosed price, a write-off) needs no
figure.
"""

import contextlib
import csv
import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
LAST_OF_THE_FIFTH_SAMPLE = 1112
LIST = "wikipedia.org/wiki/List_of_unicorn_startup_companies"
SAYS_HOW = re.compile(r"conver|comput|impl|calculat|derived|in words|per share", re.IGNORECASE)
# Units a page writes a company value in: ones, thousands, millions, billions, trillions, and the
# East Asian 10^4 and 10^8.
UNITS = (1, 1e3, 1e4, 1e6, 1e8, 1e9, 1e12)


def numbers_in(text):
    """Every number written in `text`, read with a comma or a point as the decimal mark or as the
    thousands separator."""
    found = []
    for match in re.finditer(r"\d[\d,.\u202f\u00a0' ]*\d|\d", text):
        token = re.sub(r"[\u202f\u00a0' ]", "", match.group(0))
        readings = {token.replace(",", "")}
        if re.fullmatch(r"\d{1,3}(\.\d{3})+(,\d+)?", token):
            readings.add(token.replace(".", "").replace(",", "."))
        if re.fullmatch(r"\d+,\d+", token):
            readings.add(token.replace(",", "."))
        for reading in readings:
            with contextlib.suppress(ValueError):
                found.append(float(reading))
    return found


def quote_holds(value, quote):
    """Whether the quote writes `value` dollars, to half a percent, in one of the units."""
    return any(abs(number * unit - value) <= 0.005 * value for number in numbers_in(quote) for unit in UNITS if number)


def rows(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter=delimiter))


class EvidenceTest(unittest.TestCase):
    def setUp(self):
        self.events = rows(os.path.join(HERE, "events.csv"))
        self.quotes = {}
        for line in rows(os.path.join(HERE, "evidence.tsv"), "\t"):
            key = (line["slug"], line["occurred_on"], line["event_type"], line["valuation_usd"], line["source_url"])
            self.quotes.setdefault(key, []).append(line["quote"])

    def collected(self):
        for event in self.events:
            number = re.fullmatch(r"e(\d+)", event["event_id"])
            new = number and int(number[1]) > LAST_OF_THE_FIFTH_SAMPLE
            if new and event["event_type"] != "retraction" and LIST not in event["source_url"]:
                yield event

    def test_every_collected_record_has_a_quote_that_holds_its_figure(self):
        checked = 0
        for event in self.collected():
            key = tuple(event[c] for c in ("slug", "occurred_on", "event_type", "valuation_usd", "source_url"))
            quotes = self.quotes.get(key)
            self.assertTrue(quotes, f"{event['event_id']} ({key[:4]}) has no quote in evidence.tsv")
            for quote in quotes:
                self.assertLessEqual(len(quote), 200, f"{event['event_id']}: a quote is at most 200 characters")
            value = int(event["valuation_usd"])
            holds = value == 0 or any(quote_holds(value, q) for q in quotes) or SAYS_HOW.search(event["note"])
            self.assertTrue(holds, f"{event['event_id']}: no quote writes {value} and the note says not how: {quotes}")
            checked += 1
        self.assertGreater(checked, 0, "the sample has collected records")

    def test_the_figure_reader_reads_the_notations_pages_use(self):
        self.assertTrue(quote_holds(5_150_000_000, "a deal for $5.15B"))
        self.assertTrue(quote_holds(5_150_000_000, "5,150 million dollars"))
        self.assertTrue(quote_holds(7_400_000_000, "sa valorisation à 7,4 milliards d'euros"))
        self.assertTrue(quote_holds(8_600_000_000, "評価額は86億ドル"))
        self.assertFalse(quote_holds(9_000_000_000, "valued at $8.4bn after raising $628M"))


if __name__ == "__main__":
    unittest.main()
