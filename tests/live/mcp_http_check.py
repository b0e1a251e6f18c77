"""The hosted MCP endpoint (`marks serve --mcp`, `/mcp`) driven by the official Python MCP SDK's
streamable HTTP client (a client nobody here wrote), against the real binary:

- the tools are listed, each is called, every result carries `meta`;
- each tool's numbers equal the API's for the same key (the same JSON, field for field);
- a free key's call outside its tier is a tool error (`tier_forbidden`); every POST spends one
  unit of its key's budget, and a research key past its per-minute budget gets 429
  problem+json that says when to retry; a request without a key is refused (401);
- a browser `Origin` not allowed is refused (403), on another port too, an allowed one is
  served; a body past the limit is refused (413); a GET (405), a body that is not JSON with
  another media type (415), a JSON-RPC batch or malformed JSON (400) are refused; each refusal
  is problem+json with its code, like every other error of the API;
- with --mcp not given, /mcp does not exist (404).

    python tests/live/mcp_http_check.py --marks target/debug/marks
"""

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import httpx2
from mcp.client.streamable_http import streamable_http_client

from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from marks_server import serve

ROOT = Path(__file__).resolve().parents[2]
ALLOWED_ORIGIN = "https://agents.example.test"
MAX_BODY = 4096
TOOLS = {
    "search_companies", "list_companies", "list_sectors", "get_company", "get_mark_series", "get_mark_events",
    "get_backtest", "get_resolution", "list_indices", "get_index", "get_index_constituents", "get_scorecard",
    "get_usage", "get_changes",
}  # fmt: skip


def ok(message):
    print(f"ok: {message}", flush=True)


def api(base, path, key):
    request = urllib.request.Request(base + path, headers={"X-API-Key": key})
    with urllib.request.urlopen(request) as response:
        return json.load(response)


def every_company(base, key):
    """Every company the key may list, page by page (a dataset holds more than a page)."""
    companies, cursor = [], None
    while True:
        page = api(base, "/v1/companies?limit=200" + (f"&cursor={cursor}" if cursor else ""), key)
        companies += page["companies"]
        cursor = page["page"]["next_cursor"]
        if not cursor:
            return companies


def issue(marks, keys, tier, rate):
    return subprocess.run(
        [marks, "keys", "issue", "--keys", keys, "--tier", tier, "--tenant", f"mcp-{tier}",
         "--rate-per-min", str(rate)],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def client(url, key, **headers):
    http = httpx2.AsyncClient(headers={"X-API-Key": key, **headers}, timeout=httpx2.Timeout(30))
    return http, Client(streamable_http_client(url, http_client=http))


async def calls(url, key):
    """Every tool once, with arguments that reach real data."""
    http, mcp = client(url, key)
    async with http, mcp as session:
        listed = await session.list_tools()
        names = {tool.name for tool in listed.tools}
        assert names == TOOLS, f"tools {sorted(names)}, expected {sorted(TOOLS)}"
        for tool in listed.tools:
            assert len(tool.description) > 80 and "Returns" in tool.description, tool.name
            assert tool.input_schema.get("type") == "object", tool.name
        ok(f"{len(names)} tools listed, each described with what it returns and a JSON schema")
        arguments = {
            "search_companies": {"query": "cursor"},
            "list_companies": {"limit": 5, "sort": "-value_usd"},
            "list_sectors": {},
            "get_company": {"slug": "stripe"},
            "get_mark_series": {"slug": "stripe", "coverage": 95, "from": "2025-01-01", "to": "2025-01-31"},
            "get_mark_events": {"slug": "stripe"},
            "get_backtest": {"slug": "stripe"},
            "get_resolution": {"slug": "stripe"},
            "list_indices": {},
            "get_index": {"index": "fintech", "from": "2026-11-01"},
            "get_index_constituents": {"index": "all", "date": "2025-06-30"},
            "get_scorecard": {},
            "get_usage": {},
            "get_changes": {"since": api_version(url, key)},
        }
        results = {}
        for name, args in arguments.items():
            result = await session.call_tool(name, args)
            assert not result.is_error, f"{name}: {result}"
            body = result.structured_content
            meta = body.get("meta") or {}
            assert meta.get("data_mode") and meta.get("disclaimer"), f"{name}: no meta in {body}"
            assert "disclaimer" in result.content[0].text, f"{name}: the text content lost meta"
            results[name] = (args, body)
        resolution = await session.call_tool("get_resolution", {"slug": "stripe"})
        assert any("RFC 8785" in c.text for c in resolution.content[1:]), "how to verify the record"
        ok("every tool called; every result carries meta; the record comes with how to verify it")
        return results


def api_version(url, key):
    base = url.removesuffix("/mcp")
    return api(base, "/v1/usage", key)["meta"]["dataset_version"]


def paths(args):
    """The API call each tool stands for."""
    query = lambda pairs: "&".join(f"{k}={v}" for k, v in pairs if v is not None)  # noqa: E731
    return {
        "search_companies": f"/v1/companies?q={args['search_companies']['query']}",
        "list_companies": "/v1/companies?limit=5&sort=-value_usd",
        "list_sectors": "/v1/sectors",
        "get_company": "/v1/companies/stripe",
        "get_mark_series": "/v1/companies/stripe/marks?"
        + query([("coverage", 95), ("from", "2025-01-01"), ("to", "2025-01-31")]),
        "get_mark_events": "/v1/companies/stripe/events",
        "get_backtest": "/v1/companies/stripe/backtest",
        "get_resolution": "/v1/companies/stripe/resolution",
        "list_indices": "/v1/indices",
        "get_index": "/v1/indices/fintech?from=2026-11-01",
        "get_index_constituents": "/v1/indices/all/constituents?date=2025-06-30",
        "get_scorecard": "/v1/scorecard",
        "get_usage": "/v1/usage",
        "get_changes": f"/v1/changes?since={args['get_changes']['since']}",
    }


async def tool_error(url, key, name, args):
    http, mcp = client(url, key)
    async with http, mcp as session:
        result = await session.call_tool(name, args)
        assert result.is_error, f"{name} with {key[:12]}: {result}"
        return result.structured_content


async def tiers_over_the_sample(url, slugs, free_universe, free, research):
    """Every company of the sample: a free key reads only its ten, a research key no events."""
    free_http, free_mcp = client(url, free)
    research_http, research_mcp = client(url, research)
    async with free_http, free_mcp as as_free, research_http, research_mcp as as_research:
        for slug in slugs:
            result = await as_free.call_tool("get_company", {"slug": slug})
            assert result.is_error == (slug not in free_universe), f"free key, {slug}: {result}"
            if result.is_error:
                assert result.structured_content["code"] == "tier_forbidden", result
            events = await as_research.call_tool("get_mark_events", {"slug": slug})
            assert events.is_error and events.structured_content["code"] == "tier_forbidden", slug
            backtest = await as_research.call_tool("get_backtest", {"slug": slug})
            assert not backtest.is_error, backtest
            for target in backtest.structured_content["targets"]:
                if target["kind"] == "event":
                    assert "observed_usd" not in target and "event_id" not in target, (slug, target)


PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
JSON_IN_OUT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def past_budget(url, key, budget):
    """Every POST spends one unit of its key's budget: `budget` are served, the next is refused."""
    for n in range(budget):
        status, body, _ = post(url, PING, {**JSON_IN_OUT, "X-API-Key": key})
        assert status == 200, f"request {n + 1} of {budget}: {status} {body}"
    return post(url, PING, {**JSON_IN_OUT, "X-API-Key": key})


async def origin_refused(url, key):
    http, mcp = client(url, key, Origin="https://evil.example.test")
    try:
        async with http, mcp as session:
            await session.list_tools()
    except Exception as error:  # the SDK raises on the 403 at initialisation
        return repr(error)
    raise AssertionError("a foreign Origin was served")


async def origin_allowed(url, key):
    http, mcp = client(url, key, Origin=ALLOWED_ORIGIN)
    async with http, mcp as session:
        listed = await session.list_tools()
        return len(listed.tools)


def post(url, body, headers, method="POST"):
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers


def assert_problem(answer, status, code):
    """The headers of a refusal `answer` (from `post`) after checking it is problem+json with
    `status` and `code`, its request id in the header and the body alike."""
    assert len(answer) == 3 and answer[0] == status, answer[:2]
    _, body, headers = answer
    assert headers["Content-Type"] == "application/problem+json", (headers["Content-Type"], body)
    problem = json.loads(body)
    assert (problem["status"], problem["code"], problem["instance"]) == (status, code, "/mcp"), problem
    assert problem["detail"] and problem["title"], problem
    assert problem["request_id"] == headers["X-Request-ID"], (problem, headers["X-Request-ID"])
    return headers


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--marks", required=True)
    args = parser.parse_args()
    marks = args.marks
    with tempfile.TemporaryDirectory(prefix="mcp-http-") as work:
        work = Path(work)
        snapshot = work / "sample.snap"
        subprocess.run(
            [marks, "build", "--source", ROOT / "sample", "--out", snapshot,
             "--signing-key", ROOT / "sample/demo-signing-key.pem", "--quiet"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        keys = work / "keys.toml"
        keys.write_text((ROOT / "sample/demo-keys.toml").read_text())
        enterprise = issue(marks, keys, "enterprise", 1_000_000)
        research = issue(marks, keys, "research", 5)
        free = "vmk_demo_free"
        free_unlimited = issue(marks, keys, "free", 1_000_000)
        research_unlimited = issue(marks, keys, "research", 1_000_000)

        with serve(marks, "--snapshot", snapshot, "--keys", keys, "--no-access-log") as plain:
            try:
                api(plain.url, "/mcp", enterprise)
                raise AssertionError("/mcp answered without --mcp")
            except urllib.error.HTTPError as error:
                assert error.code == 404, error.code
            ok("without --mcp there is no /mcp (404)")

        with serve(
            marks, "--snapshot", snapshot, "--keys", keys, "--no-access-log", "--mcp",
            "--mcp-allowed-origin", ALLOWED_ORIGIN, "--mcp-max-request-bytes", str(MAX_BODY),
        ) as server:  # fmt: skip
            url = server.url + "/mcp"
            results = asyncio.run(calls(url, enterprise))
            for name, path in paths({name: arguments for name, (arguments, _) in results.items()}).items():
                expected = api(server.url, path, enterprise)
                got = results[name][1]
                assert got == expected, f"{name}: the tool's answer differs from GET {path}"
            ok("each tool's answer equals the API's for the same key, field for field")

            refused = asyncio.run(tool_error(url, free, "get_mark_series", {"slug": "stripe"}))
            assert refused["code"] == "tier_forbidden" and refused["status"] == 403, refused
            refused = asyncio.run(tool_error(url, free, "list_indices", {}))
            assert refused["code"] == "tier_forbidden", refused
            ok("a free key's calls outside its tier are tool errors (tier_forbidden)")

            listed = every_company(server.url, enterprise)
            free_universe = {c["slug"] for c in every_company(server.url, free_unlimited)}
            assert len(listed) > 100 and len(free_universe) == 10
            slugs = [c["slug"] for c in listed]
            asyncio.run(tiers_over_the_sample(url, slugs, free_universe, free_unlimited, research_unlimited))
            ok(f"over all {len(slugs)} companies: a free key reads its 10 only, a research key no event or its value")

            spent = past_budget(url, research, 5)
            retry_after = int(assert_problem(spent, 429, "rate_limited")["Retry-After"])
            assert retry_after >= 1 and "retry" in json.loads(spent[1])["detail"].lower(), spent
            ok(f"every POST spends a unit: past its budget a research key gets 429, to retry in {retry_after} s")

            assert_problem(post(url, b"{}", {"Content-Type": "application/json"}), 401, "missing_api_key")
            no_key = post(url, b"{}", {"Content-Type": "application/json", "X-API-Key": "vmk_not_a_key"})
            assert_problem(no_key, 401, "invalid_api_key")
            ok("a request without a key in force is refused (401)")

            error = asyncio.run(origin_refused(url, enterprise))
            foreign = post(url, b'{"jsonrpc":"2.0","id":1,"method":"ping"}', {
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "X-API-Key": enterprise, "Origin": "https://evil.example.test"})  # fmt: skip
            assert_problem(foreign, 403, "origin_forbidden")
            other_port = post(url, PING, {**JSON_IN_OUT, "X-API-Key": enterprise, "Origin": ALLOWED_ORIGIN + ":8443"})
            assert_problem(other_port, 403, "origin_forbidden")
            assert asyncio.run(origin_allowed(url, enterprise)) == len(TOOLS)
            ok(f"a foreign Origin is refused (403; the SDK says {error[:60]}...), the allowed one served")

            big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * MAX_BODY}})
            too_big = post(url, big.encode(), {
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "X-API-Key": enterprise})  # fmt: skip
            assert_problem(too_big, 413, "request_too_large")
            ok(f"a body over {MAX_BODY} bytes is refused (413)")

            got = post(url, None, {"Accept": "text/event-stream", "X-API-Key": enterprise}, method="GET")
            assert assert_problem(got, 405, "method_not_allowed")["Allow"] == "POST", got
            not_json = post(url, b"ping", {
                "Content-Type": "text/plain", "Accept": "application/json, text/event-stream",
                "X-API-Key": enterprise, "X-Request-ID": "agent-run-42"})  # fmt: skip
            assert assert_problem(not_json, 415, "bad_request")["X-Request-ID"] == "agent-run-42"
            for body in (b"[" + PING + b"]", b'{"jsonrpc":"2.0","id":1,', b"{}"):
                assert_problem(post(url, body, {**JSON_IN_OUT, "X-API-Key": enterprise}), 400, "bad_request")
            status, _, headers = post(url, b'{"jsonrpc":"2.0","id":1,"method":"ping"}', {
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "X-API-Key": enterprise, "X-Request-ID": "agent-run-43"})  # fmt: skip
            assert status == 200 and headers["X-Request-ID"] == "agent-run-43", (status, dict(headers))
            ok(
                "the refusals (403, 413, 405 with Allow: POST, 415, 400 for a batch or malformed JSON) are "
                "problem+json with their codes; "
                "every answer carries X-Request-ID, the client's when it sent one"
            )
    print("mcp over http passed")


if __name__ == "__main__":
    main()
