"""`marks mcp` driven by the official Python MCP SDK's stdio client (a client nobody here
wrote): initialise, list the tools, check that the descriptions name the fields the interface
description (openapi/openapi.json) gives the results (an event record's every field, the outcome
kinds, the next-print forecast, the confidence as a track record, the scorecard's members), call
every tool against a live server, check the results carry `meta` and those fields, and that a
problem comes back as a tool error with its code.

    python tests/live/mcp_check.py --marks target/debug/marks --base-url URL --api-key KEY --since EARLIER_VERSION
"""

import argparse
import asyncio
import json
import os
import pathlib

from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp import ClientSession

TOOLS = {
    "search_companies",
    "list_companies",
    "list_sectors",
    "get_company",
    "get_mark_series",
    "get_mark_events",
    "get_backtest",
    "get_resolution",
    "list_indices",
    "get_index",
    "get_index_constituents",
    "get_scorecard",
    "get_usage",
    "get_changes",
}


DOCUMENT = pathlib.Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"


def described_fields():
    """What each tool's description must name, read from the interface description."""
    schemas = json.loads(DOCUMENT.read_text(encoding="utf-8"))["components"]["schemas"]
    outcome_kinds = schemas["OutcomeKind"]["enum"]
    company = ["next_reported", "confidence", "track record", "source_grade", "outcome", *outcome_kinds]
    return {
        "list_companies": company,
        "get_company": [*company, *schemas["CompanyProfileResponse"]["properties"]],
        "search_companies": ["next_reported", "source_grade", "kind"],
        "get_mark_events": [*schemas["MarkEvent"]["properties"], *schemas["ReportedAs"]["enum"]],
        "get_backtest": ["next_print_usd", "last_print_usd", "tolerance_pct", "confidence"],
        "get_resolution": schemas["SignedResolutionResponse"]["properties"]["basis"]["enum"],
        "get_scorecard": [name for name in schemas["Scorecard"]["required"] if name != "meta"] + ["track record"],
    }


def ok(message):
    print(f"ok: {message}", flush=True)


def check_meta(name, result):
    assert not result.is_error, f"{name}: {result}"
    body = result.structured_content
    meta = body.get("meta") or {}
    assert meta.get("data_mode") == "illustrative" and meta.get("provenance") == "backtest", (
        f"{name}: no meta in {body}"
    )
    assert meta.get("disclaimer"), f"{name}: no disclaimer"
    assert "disclaimer" in result.content[0].text, f"{name}: the text content lost meta"
    return body


async def run(args):
    server = StdioServerParameters(
        command=args.marks,
        args=["mcp", "--base-url", args.base_url],
        env={**os.environ, "MARKS_API_KEY": args.api_key},
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        names = {tool.name for tool in listed.tools}
        assert names == TOOLS, f"tools {sorted(names)}, expected {sorted(TOOLS)}"
        for tool in listed.tools:
            assert len(tool.description) > 80 and "Returns" in tool.description, tool
            assert tool.input_schema.get("type") == "object", tool
        fields = described_fields()
        descriptions = {tool.name: " ".join(tool.description.split()) for tool in listed.tools}
        for name, named in fields.items():
            missing = [field for field in named if field not in descriptions[name]]
            assert not missing, f"{name}'s description does not name {missing}"
        series_schema = next(t for t in listed.tools if t.name == "get_mark_series").input_schema
        assert series_schema["required"] == ["slug"] and "coverage" in series_schema["properties"], series_schema
        ok(
            f"initialised; {len(names)} tools, each described with what it returns and a JSON schema; "
            f"{sum(map(len, fields.values()))} fields and values of the interface description named in "
            f"{len(fields)} of them"
        )

        first = check_meta(
            "list_companies", await session.call_tool("list_companies", {"limit": 3, "sort": "-value_usd"})
        )
        assert len(first["companies"]) == 3 and first["page"]["has_more"], first["page"]
        second = check_meta(
            "list_companies",
            await session.call_tool(
                "list_companies", {"limit": 3, "sort": "-value_usd", "cursor": first["page"]["next_cursor"]}
            ),
        )
        values = [c["latest_mark"]["value_usd"] for c in first["companies"] + second["companies"]]
        assert values == sorted(values, reverse=True), values
        slug = first["companies"][0]["slug"]
        profile = check_meta("get_company", await session.call_tool("get_company", {"slug": slug}))
        assert profile["slug"] == slug
        assert "next_reported" in profile["latest_mark"] and "source_grade" in profile["last_event"], profile
        assert set(profile) <= set(fields["get_company"]) | {"meta"}, set(profile) - set(fields["get_company"])
        series = check_meta(
            "get_mark_series", await session.call_tool("get_mark_series", {"slug": slug, "coverage": 95})
        )
        assert series["coverage"] == 95 and series["series"], series.keys()
        events = check_meta("get_mark_events", await session.call_tool("get_mark_events", {"slug": slug}))
        assert events["events"], events
        for event in events["events"]:
            assert "retracted_by" in event and set(event) <= set(fields["get_mark_events"]), event
        card = check_meta("get_scorecard", await session.call_tool("get_scorecard", {}))
        assert set(card) - {"meta"} <= set(fields["get_scorecard"]), set(card) - set(fields["get_scorecard"])
        record = check_meta("get_resolution", await session.call_tool("get_resolution", {"slug": slug}))
        assert record["slug"] == slug and record["signature"], record.keys()
        usage = check_meta("get_usage", await session.call_tool("get_usage", {}))
        assert usage["tier"] == "enterprise", usage
        version = usage["meta"]["dataset_version"]
        unchanged = check_meta("get_changes", await session.call_tool("get_changes", {"since": version}))
        assert unchanged["versions"] == [version] and unchanged["changes"] == [], unchanged
        changes = check_meta("get_changes", await session.call_tool("get_changes", {"since": args.since, "limit": 5}))
        assert changes["versions"] == [args.since, version] and changes["changes"], changes
        assert changes["page"]["has_more"] and len(changes["changes"]) == 5, changes["page"]
        ok(
            f"every tool answered with meta: two pages by -value_usd, {slug}'s profile, {len(series['series'])} "
            f"points at 95, {len(events['events'])} events, the scorecard, a signed record, usage, changes since "
            f"{args.since}"
        )

        missing = await session.call_tool("get_company", {"slug": "no-such-company"})
        assert missing.is_error and missing.structured_content["code"] == "not_found", missing
        assert missing.structured_content["status"] == 404 and missing.structured_content["detail"], missing
        for tool, slug in [("get_company", "../usage"), ("get_mark_series", "."), ("get_mark_events", "Stripe")]:
            sneaky = await session.call_tool(tool, {"slug": slug})
            assert sneaky.is_error and sneaky.structured_content["code"] == "invalid_slug", sneaky
        bad_sort = await session.call_tool("list_companies", {"sort": "price"})
        assert bad_sort.is_error and bad_sort.structured_content["code"] == "invalid_sort", bad_sort
        too_old = await session.call_tool("get_changes", {"since": "2001-01-01"})
        assert too_old.is_error and too_old.structured_content["code"] == "invalid_parameter", too_old
        assert "/v1/export" in too_old.structured_content["detail"], too_old
        ok(
            f"problems come back as tool errors: {missing.structured_content['code']} (404), "
            f"{bad_sort.structured_content['code']} (422), {too_old.structured_content['code']} for a version "
            f"older than the change log (422); a slug outside the slug grammar never becomes a URL (invalid_slug)"
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--marks", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--since", required=True, help="a dataset version before the one served")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
