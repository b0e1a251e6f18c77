"""Tests of sample/import_public_events.py on small tables: the import rule of DESIGN section 2.

Run: python3 -m unittest sample/test_import_public_events.py (from the repository root).
Each test runs the importer as the lead does, on a temporary sample and a temporary table.
"""

import os
import subprocess
import sys
import tempfile
import unittest

IMPORTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "import_public_events.py")

OLD_EVENTS = """\
event_id,slug,event_type,occurred_on,valuation_usd,source_url,note
e0001,acme,primary_round,2020-01-01,100,https://a.example/1,Seed
e0002,acme,primary_round,2021-01-01,200,https://a.example/2,"Series A; company then named Acme Labs"
e0003,beta,ipo,2021-06-01,300,https://b.example/3,Listing
e0004,beta,primary_round,2020-06-01,150,https://b.example/4,Series A
"""
COMPANIES = """\
slug,name,sector,status,aliases
acme,Acme,ai,private,Acme Labs
beta,Beta (Beta Inc),fintech,ipo_completed,Beta Inc
"""
DATASET = """\
# A comment that stays.
dataset_version = "2026-01-01"
as_of = "2026-01-01"
data_mode = "illustrative"
"""
TABLE_HEADER = (
    "slug,name,sector,event_type,occurred_on,valuation_usd,reported_as,source_url,source_grade,note,supersedes\n"
)
TABLE = TABLE_HEADER + (
    # matches e0004: only reported_as and source_grade are taken, not the new note
    "beta,Beta (Beta Inc),fintech,primary_round,2020-06-01,150,closed,https://b.example/4,B,Series A re-verified,\n"
    # corrects e0002
    "acme,Acme,ai,primary_round,2021-01-01,250,closed,https://a.example/2b,A,Series A corrected,e0002\n"
    # new: a listing
    "acme,Acme,ai,ipo,2022-03-01,1000,closed,https://a.example/5,B,Listing,\n"
    # matches e0001
    "acme,Acme,ai,primary_round,2020-01-01,100,announced,https://a.example/1,C,Seed,\n"
    # new company
    "gamma,Gamma (Gamma Corp),space,primary_round,2022-01-01,50,in_talks,https://g.example/6,D,Seed,\n"
    # matches e0003, which the retraction below withdraws
    "beta,Beta (Beta Inc),fintech,ipo,2021-06-01,300,closed,https://b.example/3,B,Listing,\n"
)
RETRACTIONS = "event_id,slug,reason\ne0003,beta,The listing was withdrawn\n"

IMPORTED_EVENTS = """\
event_id,slug,event_type,occurred_on,valuation_usd,reported_as,source_url,source_grade,note,supersedes
e0001,acme,primary_round,2020-01-01,100,announced,https://a.example/1,C,Seed,
e0002,acme,primary_round,2021-01-01,200,,https://a.example/2,,Series A; company then named Acme Labs,
e0003,beta,ipo,2021-06-01,300,closed,https://b.example/3,B,Listing,
e0004,beta,primary_round,2020-06-01,150,closed,https://b.example/4,B,Series A,
e0005,acme,primary_round,2021-01-01,250,closed,https://a.example/2b,A,Series A corrected,e0002
e0006,acme,ipo,2022-03-01,1000,closed,https://a.example/5,B,Listing,
e0007,gamma,primary_round,2022-01-01,50,in_talks,https://g.example/6,D,Seed,
e0008,beta,retraction,2026-01-31,0,,,,The listing was withdrawn,e0003
"""
IMPORTED_COMPANIES = """\
slug,name,sector,status,aliases,domain,ticker
acme,Acme,ai,ipo_completed,Acme Labs,,
beta,Beta (Beta Inc),fintech,private,Beta Inc,,
gamma,Gamma (Gamma Corp),space,private,Gamma Corp,,
"""


class ImportTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.sample = os.path.join(tmp.name, "sample")
        self.data = os.path.join(tmp.name, "data")
        os.mkdir(self.sample)
        os.mkdir(self.data)
        self.write("sample/events.csv", OLD_EVENTS)
        self.write("sample/companies.csv", COMPANIES)
        self.write("sample/dataset.toml", DATASET)
        self.write("data/public_events.csv", TABLE)
        self.write("data/retractions.csv", RETRACTIONS)

    def path(self, name):
        return os.path.join(os.path.dirname(self.sample), name)

    def write(self, name, text):
        with open(self.path(name), "w", encoding="utf-8", newline="") as fh:
            fh.write(text)

    def read(self, name):
        with open(self.path(name), encoding="utf-8", newline="") as fh:
            return fh.read()

    def sample_files(self):
        return {name: self.read(f"sample/{name}") for name in ("events.csv", "companies.csv", "dataset.toml")}

    def run_import(self, *flags):
        command = [sys.executable, IMPORTER, self.path("data/public_events.csv"), self.sample, *flags]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    def import_ok(self):
        done = self.run_import("--dataset-version", "2026-02-01", "--as-of", "2026-01-31")
        self.assertEqual(done.returncode, 0, done.stderr)
        return done

    def test_keeps_ids_fills_in_appends_in_file_order_and_retracts(self):
        self.import_ok()
        self.assertEqual(self.read("sample/events.csv"), IMPORTED_EVENTS)

    def test_companies_new_ones_and_status_from_the_effective_view(self):
        self.import_ok()
        self.assertEqual(self.read("sample/companies.csv"), IMPORTED_COMPANIES)

    def test_rewrites_only_the_two_dates_of_dataset_toml(self):
        self.import_ok()
        expected = DATASET.replace('version = "2026-01-01"', 'version = "2026-02-01"')
        self.assertEqual(
            self.read("sample/dataset.toml"), expected.replace('as_of = "2026-01-01"', 'as_of = "2026-01-31"')
        )

    def test_a_second_run_changes_no_byte(self):
        self.import_ok()
        first = self.sample_files()
        self.import_ok()
        self.assertEqual(self.sample_files(), first)
        self.assertEqual(self.run_import().returncode, 0)
        self.assertEqual(self.sample_files(), first)

    def assert_refused(self, file, line, message):
        before = self.sample_files()
        done = self.run_import()
        self.assertNotEqual(done.returncode, 0)
        self.assertNotIn("Traceback", done.stderr)
        self.assertTrue(done.stderr.startswith(f"{self.path(file)}:{line}: "), done.stderr)
        self.assertIn(message, done.stderr)
        self.assertEqual(self.sample_files(), before, "a refused import writes nothing")

    def test_refuses_a_supersedes_naming_no_event(self):
        self.write("data/public_events.csv", TABLE.replace(",e0002\n", ",e0099\n"))
        self.assert_refused("data/public_events.csv", 3, "supersedes e0099")

    def test_refuses_an_unknown_event_type(self):
        self.write("data/public_events.csv", TABLE.replace("acme,Acme,ai,ipo,", "acme,Acme,ai,listing,"))
        self.assert_refused("data/public_events.csv", 4, "unknown event_type 'listing'")

    def test_refuses_a_retraction_naming_no_event(self):
        self.write("data/retractions.csv", RETRACTIONS + "e0099,beta,No such event\n")
        self.assert_refused("data/retractions.csv", 3, "retracts e0099")

    def test_refuses_a_new_id_that_is_taken(self):
        # The ids are out of order: the one after the last record's (e0004) is e0005, taken.
        self.write("sample/events.csv", OLD_EVENTS.replace("e0003,", "e0005,"))
        self.assert_refused("data/public_events.csv", 3, "new id e0005 is already taken")

    def test_a_brand_alias_needs_its_evidence(self):
        self.write("sample/aliases.csv", "slug,alias,evidence\ngamma,G.Example,e0007\n")
        self.import_ok()
        companies = self.read("sample/companies.csv")
        self.assertIn("gamma,Gamma (Gamma Corp),space,private,Gamma Corp;G.Example,,\n", companies)
        self.write("sample/aliases.csv", "slug,alias,evidence\ngamma,Rocketco,e0007\n")
        self.assert_refused("sample/aliases.csv", 2, "'Rocketco' is not in the note or source of e0007")
        self.write("sample/aliases.csv", "slug,alias,evidence\ngamma,Seed,e0001\n")
        self.assert_refused("sample/aliases.csv", 2, "evidence e0001 is not an event of gamma")

    def test_refuses_a_reported_as_the_type_does_not_take(self):
        self.write(
            "data/public_events.csv",
            TABLE + "gamma,Gamma (Gamma Corp),space,fund_mark,2022-06-01,40,closed,https://g.example/7,A,Mark,\n",
        )
        self.assert_refused("data/public_events.csv", 8, "a fund_mark is reported as one of estimate, not 'closed'")
        self.write(
            "data/public_events.csv",
            TABLE + "gamma,Gamma (Gamma Corp),space,buyback,2022-06-01,40,in_talks,https://g.example/7,A,Buyback,\n",
        )
        self.assert_refused("data/public_events.csv", 8, "a buyback is reported as one of closed, not 'in_talks'")

    def test_data_v6_types_and_an_agreed_or_filed_listing_leave_a_company_private(self):
        rows = (
            "gamma,Gamma (Gamma Corp),space,buyback,2022-06-01,40,closed,https://g.example/7,A,Staff buyback,\n"
            "gamma,Gamma (Gamma Corp),space,internal_valuation,2022-07-01,30,estimate,https://g.example/8,A,409A,\n"
            "gamma,Gamma (Gamma Corp),space,spac_listing,2022-08-01,90,announced,https://g.example/9,B,SPAC merger,\n"
            "gamma,Gamma (Gamma Corp),space,acquisition_terminated,2023-01-01,90,closed,https://g.example/10,B,Ended,\n"
            "gamma,Gamma (Gamma Corp),space,ipo,2024-01-01,200,in_talks,https://g.example/11,B,Filing,\n"
            "delta,Delta,climate-energy,primary_round,2024-01-01,100,closed,https://d.example/1,B,Seed,\n"
        )
        self.write("data/public_events.csv", TABLE + rows)
        self.import_ok()
        companies = self.read("sample/companies.csv")
        self.assertIn("gamma,Gamma (Gamma Corp),space,private,Gamma Corp,,\n", companies)
        self.assertIn("delta,Delta,climate-energy,private,,,\n", companies)
        self.assertIn("e0009,gamma,internal_valuation,2022-07-01,30,estimate,", self.read("sample/events.csv"))

    def test_identifiers_come_from_their_pages(self):
        identifiers = "slug,domain,ticker,source_url,quote\n"
        self.write(
            "sample/identifiers.csv",
            identifiers + "acme,acme.ai,NASDAQ:ACME,https://www.acme.ai/about,Acme trades on the Nasdaq as ACME\n"
            'gamma,gamma.space,,https://news.example/gamma,"Gamma (gamma.space) raised a seed"\n',
        )
        self.import_ok()
        companies = self.read("sample/companies.csv")
        self.assertIn("acme,Acme,ai,ipo_completed,Acme Labs,acme.ai,NASDAQ:ACME\n", companies)
        self.assertIn("gamma,Gamma (Gamma Corp),space,private,Gamma Corp,gamma.space,\n", companies)
        first = self.sample_files()
        self.import_ok()
        self.assertEqual(self.sample_files(), first, "run twice, nothing changes")
        for row, message in [
            ("beta,beta.com,,https://news.example/beta,Beta raised", "beta.com is neither the host"),
            ("beta,www.beta.com,,https://www.beta.com/,Beta", "domain 'www.beta.com' is not a bare"),
            ("beta,acme.ai,,https://acme.ai/beta,Beta", "domain acme.ai is already acme's"),
            ("beta,,NYSE:BETA,https://news.example/b,Beta trades as BETA", "beta has no closed listing"),
            ("acme,,ACME,https://news.example/a,ACME", "ticker 'ACME' is not EXCHANGE:SYMBOL"),
            ("acme,,NYSE:ACM,https://news.example/a,Acme listed", "the symbol ACM is not in the quote"),
        ]:
            self.write(
                "sample/identifiers.csv",
                identifiers + "acme,acme.ai,NASDAQ:ACME,https://www.acme.ai/about,ACME\n" + row + "\n",
            )
            self.assert_refused("sample/identifiers.csv", 3, message)


if __name__ == "__main__":
    unittest.main()
