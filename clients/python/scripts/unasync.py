#!/usr/bin/env python3
"""Writes the blocking client (``_sync.py``) from the asyncio one (``_async.py``).

The two clients are one source: ``src/valuation_marks/_async.py``. This script rewrites it
token by token (``async def`` -> ``def``, ``await x`` -> ``x``, ``AsyncClient`` -> ``Client``,
``__aiter__`` -> ``__iter__``, ``asyncio.sleep`` -> ``time.sleep`` ...), the pattern of
encode/httpcore's ``scripts/unasync.py``, and writes ``_sync.py`` under a header saying so.

    python scripts/unasync.py           # rewrite _sync.py
    python scripts/unasync.py --check   # exit 1 if _sync.py is not what this script writes

``tests/test_unasync.py`` runs the check, so a stale ``_sync.py`` fails the tests. Standard
library only.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "valuation_marks"
SOURCE = PACKAGE / "_async.py"
TARGET = PACKAGE / "_sync.py"

HEADER = (
    "# generated from _async.py by scripts/unasync.py; do not edit.\n"
    "# Change _async.py and run `python scripts/unasync.py` (tests/test_unasync.py checks it).\n"
)

# The module docstring of _sync.py (the one of _async.py speaks of the asyncio client).
DOCSTRING = '''"""``Client``, the blocking client: ``httpx.Client`` and ``time.sleep`` drive the shared core.

Generated from ``_async.py``, the one source of both clients, by ``scripts/unasync.py``.
Requests, parsing, bounds and retry decisions are the shared ones of ``_core``; only the I/O
loop is here.
"""
'''

# Whole lines whose sync form is not a token-wise rewrite: the imports, kept sorted.
LINES = [
    (
        "import asyncio\nimport dataclasses\nimport io\nimport os\nimport tempfile\n",
        "import dataclasses\nimport io\nimport os\nimport tempfile\nimport time\n",
    ),
    (
        "from collections.abc import AsyncIterator, Awaitable, Generator, Iterable\n",
        "from collections.abc import Generator, Iterable, Iterator\n",
    ),
]

# Token-wise rewrites, in order; \b keeps them to whole names.
TOKENS = [
    (r"\basync def\b", "def"),
    (r"\basync for\b", "for"),
    (r"\basync with\b", "with"),
    (r"\bawait ", ""),
    (r"\basyncio\.sleep\b", "time.sleep"),
    (r"\bAwaitable\[([\w.]+)\]", r"\1"),
    (r"\bAsync(Iterator|Iterable|Generator|Client|Paginator|ExportStream)\b", r"\1"),
    (r"\b__aiter__\b", "__iter__"),
    (r"\b__anext__\b", "__next__"),
    (r"\bStopAsyncIteration\b", "StopIteration"),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\baclose\b", "close"),
    (r"\baread\b", "read"),
    (r"\baiter_(raw|bytes|lines|text)\b", r"iter_\1"),
]

# What the rewrite leaves that a blocking generator says more simply (ruff's UP028, C416).
IDIOMS = [
    (re.compile(r"^(\s*)for (\w+) in (.+):\n\1    yield \2\n", re.M), r"\1yield from \3\n"),
    (re.compile(r"\[(\w+) for \1 in ([\w.]+)\]"), r"list(\2)"),
]


def unasync(source: str) -> str:
    if not source.startswith('"""'):
        raise SystemExit(f"unasync: {SOURCE.name} does not open with its docstring")
    text = DOCSTRING + source[source.index('"""\n', 3) + 4 :]
    for old, new in LINES:
        if old not in text:
            raise SystemExit(f"unasync: {old!r} is no longer in {SOURCE.name}; update LINES")
        text = text.replace(old, new)
    for pattern, replacement in TOKENS:
        text = re.sub(pattern, replacement, text)
    for compiled, replacement in IDIOMS:
        text = compiled.sub(replacement, text)
    leftover = re.search(r"\b(async|await|asyncio|Async[A-Z]\w*|__a(iter|next|enter|exit)__)\b", text)
    if leftover is not None:
        line = text.count("\n", 0, leftover.start()) + 1
        raise SystemExit(f"unasync: {leftover.group(0)!r} left on line {line} of the output; add a rule")
    return HEADER + text


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if _sync.py is stale")
    args = parser.parse_args()
    generated = unasync(SOURCE.read_text(encoding="utf-8"))
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
    if args.check:
        if current != generated:
            print(f"{TARGET} is stale: run python scripts/unasync.py", file=sys.stderr)
            return 1
        return 0
    if current != generated:
        TARGET.write_text(generated, encoding="utf-8")
        print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
