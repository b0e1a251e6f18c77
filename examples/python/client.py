#!/usr/bin/env python3
"""A small Valuation Marks client, and a check that runs it against a live server.

It shows the four things an integration needs:
  * walking every page of listCompanies by following page.next_cursor;
  * honouring Retry-After on 429, with exponential backoff on top;
  * revalidating with If-None-Match, so unchanged bodies cost a 304 and no bytes;
  * verifying a signed resolution record against /v1/signing-keys with `cryptography`.

Usage:
    python client.py --base-url http://127.0.0.1:8080 --api-key vmk_demo_enterprise
    python client.py --base-url http://127.0.0.1:8080 --api-key vmk_demo_free --expect-tier free

Exits non-zero if anything the API promises does not hold.
"""
import argparse
import base64
import json
import sys
import time

import requests
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


class ApiError(Exception):
    """An RFC 9457 problem returned by the API."""

    def __init__(self, problem):
        super().__init__(f"{problem.get('status')} {problem.get('code')}: {problem.get('detail')}")
        self.problem = problem


class MarksClient:
    def __init__(self, base_url, api_key, max_retries=5):
        self.base_url = base_url.rstrip("/")
        self.session = requests.Session()
        self.session.headers["X-API-Key"] = api_key
        self.max_retries = max_retries
        self.cache = {}  # (path, params) -> (etag, body)
        self.revalidated = 0  # answers served from cache after a 304
        self.retries = 0  # 429s waited out
        self.budget = None  # (limit, remaining) from the last answer's rate-limit headers

    def get(self, path, params=None):
        params = {k: v for k, v in (params or {}).items() if v is not None}
        key = (path, tuple(sorted(params.items())))
        for attempt in range(self.max_retries + 1):
            headers = {}
            if key in self.cache:
                headers["If-None-Match"] = self.cache[key][0]
            response = self.session.get(self.base_url + path, params=params, headers=headers, timeout=30)
            if "X-RateLimit-Limit" in response.headers:
                self.budget = (
                    int(response.headers["X-RateLimit-Limit"]),
                    int(response.headers["X-RateLimit-Remaining"]),
                )
            if response.status_code == 304:
                self.revalidated += 1
                return self.cache[key][1]
            if response.status_code == 429 and attempt < self.max_retries:
                # Retry-After is the server's word; never retry sooner. Back off further on
                # repeated refusals so many clients sharing a budget spread out.
                wait = max(int(response.headers.get("Retry-After", "1")), 1)
                self.retries += 1
                time.sleep(wait * (1 if attempt == 0 else 2 ** (attempt - 1)))
                continue
            if response.status_code >= 400:
                raise ApiError(response.json())
            body = response.json()
            if "ETag" in response.headers:
                self.cache[key] = (response.headers["ETag"], body)
            return body
        raise ApiError({"status": 429, "code": "rate_limited", "detail": "gave up after retries"})

    def companies(self, limit=50, **filters):
        """Every company of a list, following next_cursor page by page."""
        cursor = None
        while True:
            page = self.get("/v1/companies", dict(filters, limit=limit, cursor=cursor))
            yield from page["companies"]
            cursor = page["page"]["next_cursor"]
            if cursor is None:
                return

    def signing_keys(self):
        return {k["kid"]: k for k in self.get("/v1/signing-keys")["keys"]}

    def verified_resolution(self, slug):
        """The resolution record of a company, after checking its signature."""
        record = self.get(f"/v1/companies/{slug}/resolution")
        verify_record(record, self.signing_keys())
        return record


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def canonical_json(value):
    """RFC 8785 (JCS) for what resolution records hold: objects, strings and integers.

    For such values JCS is sorted keys, no whitespace and UTF-8; records carry no floats, so
    no number needs ECMAScript formatting. (The `jcs` package on PyPI covers the general case.)
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def verify_record(record, keys_by_kid):
    """Raises InvalidSignature unless the record is signed by the key it names."""
    unsigned = {k: v for k, v in record.items() if k != "signature"}
    jwk = keys_by_kid[record["key_id"]]
    if (jwk["kty"], jwk["crv"]) != ("OKP", "Ed25519"):
        raise InvalidSignature("not an Ed25519 key")
    public_key = Ed25519PublicKey.from_public_bytes(b64url_decode(jwk["x"]))
    public_key.verify(b64url_decode(record["signature"]), canonical_json(unsigned))


def check(condition, message):
    if not condition:
        sys.exit(f"FAILED: {message}")
    print(f"ok: {message}")


def run_checks(client, expect_tier):
    if expect_tier == "free":
        # getUsage needs Research; every answer, this refusal included, carries the budget.
        try:
            client.get("/v1/usage")
            check(False, "a free key must not read /v1/usage")
        except ApiError as error:
            check(error.problem["code"] == "tier_forbidden", "a free key gets 403 tier_forbidden on /v1/usage")
        check(client.budget is not None and client.budget[0] == 10, f"its budget is in the headers: {client.budget}")
    else:
        usage = client.get("/v1/usage")
        check(usage["tier"] == expect_tier, f"key is {expect_tier} ({usage['rate_per_min']}/min)")

    everything = list(client.companies(limit=7, sort="-value_usd"))
    slugs = [c["slug"] for c in everything]
    check(len(slugs) == len(set(slugs)), f"walked {len(slugs)} companies over pages of 7, none twice")
    values = [c["latest_mark"]["value_usd"] for c in everything]
    check(values == sorted(values, reverse=True), "pages follow the requested sort")
    if expect_tier == "free":
        check(len(slugs) == 10, "the free tier lists its top-10 universe")
    else:
        one_page = client.get("/v1/companies", {"limit": 200})["companies"]
        check(sorted(slugs) == sorted(c["slug"] for c in one_page), "paging saw the same companies as one big page")

    first = slugs[0]
    client.get(f"/v1/companies/{first}")
    before = client.revalidated
    profile = client.get(f"/v1/companies/{first}")
    check(client.revalidated == before + 1 and profile["slug"] == first, "an unchanged profile revalidates with 304")

    if expect_tier == "enterprise":
        keys = client.signing_keys()
        for slug in slugs:
            record = client.verified_resolution(slug)
        check(True, f"{len(slugs)} resolution records verify against /v1/signing-keys")
        tampered = dict(record, value_usd=record["value_usd"] + 1)
        try:
            verify_record(tampered, keys)
            check(False, "a tampered record must not verify")
        except InvalidSignature:
            check(True, "a tampered record does not verify")

    if expect_tier == "free":
        # Spend the rest of the 10/min budget; the client must wait out Retry-After itself.
        started = time.monotonic()
        for _ in range(12):
            client.get(f"/v1/companies/{first}", {})
            client.cache.clear()
            if client.retries:
                break
        check(client.retries >= 1, f"a 429 was waited out ({time.monotonic() - started:.1f}s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8080")
    parser.add_argument("--api-key", default="vmk_demo_enterprise")
    parser.add_argument("--expect-tier", default="enterprise")
    args = parser.parse_args()
    run_checks(MarksClient(args.base_url, args.api_key), args.expect_tier)


if __name__ == "__main__":
    main()
