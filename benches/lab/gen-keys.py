#!/usr/bin/env python3
"""Appends N generated keys to a keys file, for benches/lab/keys.sh.

    python3 benches/lab/gen-keys.py N KEYS_FILE

Each entry is what `marks keys issue` writes (a key_id, a tenant, a tier cycling through all
five, an active status, a date and a BLAKE3-shaped hash), but the hashes are random bytes: no
key exists for them, so they cost the server exactly what real keys cost and can never be
used. Needs nothing beyond Python's standard library.
"""

import os
import sys

TIERS = ["free", "research", "pro", "business", "enterprise"]


def main():
    count, path = int(sys.argv[1]), sys.argv[2]
    with open(path, "a", encoding="ascii") as out:
        chunk = []
        for i in range(count):
            chunk.append(
                f'\n[[key]]\nkey_id = "gen-{i:07d}"\ntenant = "tenant-{i // 10:06d}"\n'
                f'tier = "{TIERS[i % len(TIERS)]}"\nstatus = "active"\ncreated = "2026-11-23"\n'
                f'hash = "blake3:{os.urandom(32).hex()}"\n'
            )
            if len(chunk) == 10_000:
                out.write("".join(chunk))
                chunk.clear()
        out.write("".join(chunk))


if __name__ == "__main__":
    main()
