#!/usr/bin/env python3
"""Checks what an integration relies on against a live server, with the official SDK.

It uses `valuation_marks` (clients/python: `pip install ./clients/python`) for the four things
an integration needs, and asserts each:
  * walking every page of listCompanies (the SDK follows page.next_cursor);
  * honouring Retry-After on 429 (the SDK waits it out and retries);
  * revalidating with If-None-Match, so unchanged bodies cost a 304 and no bytes (ETag cache);
  * verifying signed resolution records against a pinned key: the RFC 7638 thumbprint of the
    signer's key, obtained apart from the server (--trusted-key; the default is the sample's
    demo key), with the public key taken from /v1/signing-keys.

Usage:
    python client.py --base-url http://127.0.0.1:8080 --api-key vmk_demo_enterprise
    python client.py --base-url http://127.0.0.1:8080 --api-key vmk_demo_free --expect-tier free
    python client.py --base-url https://marks.example --trusted-key <your publisher's thumbprint>

Exits non-zero if anything the API promises does not hold.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

from valuation_marks import Client, RetryEvent, SignatureError, TierForbidden

# The thumbprint (kid) of the sample's demo signing key, sample/demo-signing-key.pem.
DEMO_KEY_THUMBPRINT = "8cFQvvPN3YW3NukGbuYF1Nl_KFW3PuXFAmgKKMweRBY"


def check(condition: bool, message: str) -> None:
    if not condition:
        sys.exit(f"FAILED: {message}")
    print(f"ok: {message}")


def run_checks(client: Client, expect_tier: str, retries: list[RetryEvent], trusted_key: str) -> None:
    if expect_tier == "free":
        # getUsage needs Research; every answer, this refusal included, carries the budget.
        try:
            client.usage()
            check(False, "a free key must not read /v1/usage")
        except TierForbidden as error:
            check(error.code == "tier_forbidden", "a free key gets 403 tier_forbidden on /v1/usage")
        budget = client.rate_limit
        check(budget is not None and budget.limit == 10, f"its budget is in the headers: {budget}")
    else:
        usage = client.usage()
        check(usage.tier == expect_tier, f"key is {expect_tier} ({usage.rate_per_min}/min)")

    everything = list(client.companies(limit=7, sort="-value_usd"))
    slugs = [c.slug for c in everything]
    check(len(slugs) == len(set(slugs)), f"walked {len(slugs)} companies over pages of 7, none twice")
    values = [c.latest_mark.value_usd for c in everything]
    check(values == sorted(values, reverse=True), "pages follow the requested sort")
    meta = everything[0].meta
    check(meta.data_mode in ("illustrative", "live"), f"data is {meta.data_mode}/{meta.provenance}, as of {meta.as_of}")
    if expect_tier == "free":
        check(len(slugs) == 10, "the free tier lists its top-10 universe")
    else:
        big_pages = list(client.companies(limit=200))
        check(sorted(slugs) == sorted(c.slug for c in big_pages), "pages of 7 saw the same companies as pages of 200")

    first = slugs[0]
    client.company(first)
    before = client.stats.not_modified
    profile = client.company(first)
    check(
        client.stats.not_modified == before + 1 and profile.slug == first, "an unchanged profile revalidates with 304"
    )

    if expect_tier == "enterprise":
        keys = client.signing_keys()  # public keys; which of them to trust is pinned
        for slug in slugs:
            record = client.resolution(slug)
            record.verify(trusted_key, keys=keys)
        check(True, f"{len(slugs)} resolution records verify against the pinned key {trusted_key}")
        tampered = dataclasses.replace(record, raw={**record.raw, "value_usd": record.value_usd + 1})
        try:
            tampered.verify(trusted_key, keys=keys)
            check(False, "a tampered record must not verify")
        except SignatureError:
            check(True, "a tampered record does not verify")

    if expect_tier == "free":
        # Spend the rest of the 10/min budget; the client must wait out Retry-After itself.
        started = time.monotonic()
        for _ in range(12):
            client.company(first)
            if retries:
                break
        waited = ", ".join(f"{event.wait:.1f}s after a {event.status}" for event in retries)
        check(len(retries) >= 1, f"a 429 was waited out ({waited}; {time.monotonic() - started:.1f}s in all)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8080")
    parser.add_argument("--api-key", default="vmk_demo_enterprise")
    parser.add_argument("--expect-tier", default="enterprise")
    parser.add_argument(
        "--trusted-key", default=DEMO_KEY_THUMBPRINT, help="RFC 7638 thumbprint of the signing key to trust"
    )
    args = parser.parse_args()
    retries: list[RetryEvent] = []
    with Client(
        api_key=args.api_key, base_url=args.base_url, cache=True, max_retries=5, on_retry=retries.append
    ) as client:
        run_checks(client, args.expect_tier, retries, args.trusted_key)


if __name__ == "__main__":
    main()
