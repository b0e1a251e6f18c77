"""The docs' console examples, run against `marks serve` on the bundled sample: checked, or rewritten.

Every ```console block of the Markdown files given is a session: `$ COMMAND` lines (a line ending
in `\\` continues on the next), each followed by what it prints, up to the next `$` line or the
end of the block. Blank lines at the end of an output separate examples and are not compared.

    python3 tools/doc_examples.py --check docs/api.md docs/mirroring.md ...
        exits 1 naming every example whose output is not what its command prints now
    python3 tools/doc_examples.py --write docs/api.md docs/mirroring.md ...
        replaces each such output with what the command prints now (examples that still agree
        are left as they are, so request ids and dates do not churn; a command that exits
        non-zero, a tool missing or the SDK not installed, is reported and never written)

The sample (`sample/`) is built once with its demo signing key, as `marks serve` does on a fresh
clone, and each block runs against a server of its own (tests/harness/marks_server.py: port 0,
`--ready-file`) with the demo keys and `--mcp`, as `marks serve` with no options serves it: a
block's budgets and requests are its own, whatever ran before it. A block is one bash script, so
a shell variable set by one command is seen by the next; it runs from a scratch directory that
links every top-level entry of the repository (commands name `examples/...` as from the root, and
the files they write stay in the scratch directory), stderr shown with stdout as on a terminal.
`http://127.0.0.1:8080` in a command is rewritten to the server's real address, and back in what
it prints. On the PATH: `marks` (the binary tested) and `python` (the interpreter running this,
or --python: the mirroring example needs the SDK installed there, as in tests/live/api-checks.sh).

A block that cannot run against the sample server on purpose (it builds snapshots, names a file
the reader made) is skipped with a comment on the line before its fence, saying why:

    <!-- doc-examples: skip: the reason -->

A block whose server serves the sample built with `--previous` of an older dataset, so that the
change log reaches back to that version, says which dataset directory, the same way:

    <!-- doc-examples: previous builder/tests/golden/sample-v3 -->

The binary is $MARKS_BIN (or --marks), by default target/debug/marks. Standard library only.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "harness"))

from marks_server import serve  # noqa: E402 - the harness lives beside the tests

DOC_URL = "http://127.0.0.1:8080"
DOC_ADDR = "127.0.0.1:8080"
FENCE = "```console"
SKIP = re.compile(r"^<!--\s*doc-examples:\s*skip:\s*(\S.*?)\s*-->$")
PREVIOUS = re.compile(r"^<!--\s*doc-examples:\s*previous\s+(\S+)\s*-->$")
DIRECTIVE = re.compile(r"^<!--\s*doc-examples:")
BLOCK_TIMEOUT = 300.0

# What differs on every run by nature, replaced on both sides before comparing. Each line is
# matched on its own; header names in any case, as curl prints what the server sent.
_VOLATILE: list[tuple[re.Pattern[str], str]] = [
    # Made per request: a random id, echoed in every error body (and an MCP tool error).
    (re.compile(r"(?i)^(x-request-id:\s*).*$"), r"\1<request id>"),
    (re.compile(r'("request_id":\s*")[^"]*(")'), r"\1<request id>\2"),
    # The clock.
    (re.compile(r"(?i)^(date:\s*).*$"), r"\1<date>"),
    (re.compile(r'("loaded_at":\s*)\d+'), r"\1<loaded at>"),
    # The budget: when the bucket is full again, and what is left of it, depend on the clock and
    # on how fast the commands before ran (a bucket refills continuously).
    (re.compile(r"(?i)^(x-ratelimit-reset:\s*)\d+"), r"\1<reset>"),
    (re.compile(r"(?i)^(x-ratelimit-remaining:\s*)\d+"), r"\1<remaining>"),
    (re.compile(r"(?i)^(ratelimit:.*;r=)\d+(;t=)\d+"), r"\1<remaining>\2<seconds>"),
    # How long until one request fits again: the refill since the bucket emptied, so the time
    # the requests before took.
    (re.compile(r"(?i)^(retry-after:\s*)\d+"), r"\1<seconds>"),
    (re.compile(r"(retry after )\d+( seconds?)"), r"\1<n>\2"),
    # Cursors are authenticated with the cursor key, random per process.
    (re.compile(r'("next_cursor":\s*")[^"]*(")'), r"\1<cursor>\2"),
    (re.compile(r"(?i)^(x-next-cursor:\s*).*$"), r"\1<cursor>"),
]
# A list page's ETag is derived from the cursor key too (its body carries cursors made with it):
# volatile in an example whose command asks for a list page (listCompanies, getChanges). Every
# other ETag names bytes of the snapshot, the same on every run, and is compared.
_LIST_PAGE = re.compile(r"/v1/(?:companies|changes)(?![\w/-])")
_ETAG = (re.compile(r'(?i)^(etag:\s*)"[^"]*"'), r"\1<list page etag>")


@dataclasses.dataclass
class Example:
    """One `$ command` and the output the doc shows after it."""

    line: int  # 1-based line of its `$` in the file
    command: list[str]  # its lines, the `$ ` cut from the first
    output: list[str]  # the doc's output lines, separators excluded
    separator: list[str]  # the blank lines after the output
    start: int  # 0-based index of the first output line in the file's lines
    end: int  # 0-based index past the output (and its separator)


@dataclasses.dataclass
class Block:
    line: int
    examples: list[Example]
    previous: str | None  # a dataset directory the sample is built with --previous of


def parse(lines: list[str], path: Path) -> tuple[list[Block], list[tuple[int, str]]]:
    """The console blocks of a file, and the skipped ones (line, reason)."""
    blocks: list[Block] = []
    skipped: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != FENCE:
            i += 1
            continue
        fence = i
        close = next((j for j in range(fence + 1, len(lines)) if lines[j].strip() == "```"), None)
        if close is None:
            raise SystemExit(f"{path}:{fence + 1}: a console block that never ends")
        before = next((lines[j].strip() for j in range(fence - 1, -1, -1) if lines[j].strip()), "")
        i = close + 1
        skip = SKIP.match(before)
        if skip:
            skipped.append((fence + 1, skip[1]))
            continue
        previous = PREVIOUS.match(before)
        if DIRECTIVE.match(before) and not previous:
            raise SystemExit(f"{path}:{fence + 1}: not a directive this tool knows: {before}")
        if previous and not (ROOT / previous[1] / "dataset.toml").is_file():
            raise SystemExit(f"{path}:{fence + 1}: no dataset at {previous[1]}")
        examples: list[Example] = []
        j = fence + 1
        while j < close:
            if not lines[j].startswith("$ "):
                if examples or lines[j].strip():
                    raise SystemExit(f"{path}:{j + 1}: a console block must start with a `$ ` command")
                j += 1
                continue
            line = j
            command = [lines[j][2:]]
            while command[-1].endswith("\\") and j + 1 < close:
                j += 1
                command.append(lines[j])
            j += 1
            start = j
            while j < close and not lines[j].startswith("$ "):
                j += 1
            output = lines[start:j]
            kept = len(output)
            while kept and not output[kept - 1].strip():
                kept -= 1
            examples.append(Example(line + 1, command, output[:kept], output[kept:], start, j))
        if examples:
            blocks.append(Block(fence + 1, examples, previous[1] if previous else None))
    return blocks, skipped


def normalise(text: list[str], command: str) -> list[str]:
    rules = list(_VOLATILE)
    if _LIST_PAGE.search(command):
        rules.append(_ETAG)
    out = []
    for line in text:
        for pattern, replacement in rules:
            line = pattern.sub(replacement, line)
        out.append(line)
    return out


class Runner:
    """Builds the sample once; runs each block against a server of its own."""

    def __init__(self, marks: Path, python: Path, work: Path) -> None:
        self.marks = marks
        self.work = work
        self.snapshots: dict[str | None, Path] = {}
        self.keys = work / "demo-keys.toml"
        shutil.copyfile(ROOT / "sample" / "demo-keys.toml", self.keys)
        self.bin = work / "bin"
        self.bin.mkdir()
        (self.bin / "marks").symlink_to(marks)
        # A script, not a link: a virtual environment's interpreter knows itself by its path.
        (self.bin / "python").write_text(f'#!/bin/sh\nexec "{python}" "$@"\n')
        (self.bin / "python").chmod(0o755)
        self.blocks = 0

    def _build(self, source: Path, out: Path, *more: str) -> None:
        built = subprocess.run(
            [str(self.marks), "build", "--source", str(source), "--out", str(out),
             "--signing-key", str(ROOT / "sample" / "demo-signing-key.pem"), "--quiet", *more],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if built.returncode != 0:
            raise SystemExit(f"building {source} failed:\n{built.stdout}{built.stderr}")

    def snapshot(self, previous: str | None) -> Path:
        """The sample as `marks serve` builds it; or built with --previous of a snapshot of `previous`."""
        if previous in self.snapshots:
            return self.snapshots[previous]
        out = self.work / f"sample-{len(self.snapshots)}.snap"
        if previous is None:
            self._build(ROOT / "sample", out)
        else:
            older = self.work / f"previous-{len(self.snapshots)}"
            shutil.copytree(ROOT / previous, older)
            _carry_sample_log(older)
            self._build(older, older / "built.snap")
            self._build(ROOT / "sample", out, "--previous", str(older / "built.snap"))
        self.snapshots[previous] = out
        return out

    def run(self, block: Block) -> list[tuple[list[str], int]]:
        """What each command of the block prints, its address written as the doc's, and its exit status."""
        self.blocks += 1
        scratch = self.work / f"block-{self.blocks}"
        scratch.mkdir()
        for entry in ROOT.iterdir():
            if entry.name != ".git":
                (scratch / entry.name).symlink_to(entry)
        marker = f"@@doc-examples-{secrets.token_hex(8)}@@"
        snapshot = self.snapshot(block.previous)
        with serve(self.marks, "--snapshot", snapshot, "--keys", self.keys, "--mcp", "--no-access-log") as server:
            url = server.url.rstrip("/")
            addr = url.split("://", 1)[1]
            script = ["exec 2>&1"]
            for n, example in enumerate(block.examples):
                # The marker on a line of its own even after an output without a final newline.
                script.append(f"printf '\\n%s %d\\n' '{marker}' {n}")
                script.append("\n".join(example.command).replace(DOC_URL, url))
                script.append(f"printf '\\n%s status %d\\n' '{marker}' $?")
            path = scratch / "block.sh"
            path.write_text("\n".join(script) + "\n", encoding="utf-8")
            env = dict(os.environ, PATH=f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}")
            try:
                done = subprocess.run(
                    ["bash", str(path)], cwd=scratch, env=env, stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE, timeout=BLOCK_TIMEOUT, check=False,
                )  # fmt: skip
                printed = done.stdout.decode(errors="replace")
            except subprocess.TimeoutExpired as timeout:
                printed = (timeout.stdout or b"").decode(errors="replace")
                printed += f"\n(the block did not finish within {BLOCK_TIMEOUT:.0f} s)\n"
        printed = printed.replace(url, DOC_URL).replace(addr, DOC_ADDR)
        outputs: list[list[str]] = [[] for _ in block.examples]
        # A command that never finished (the block timed out) has no status: -1.
        statuses = [-1 for _ in block.examples]
        current: int | None = None
        for raw in printed.split("\n"):
            if raw.startswith(marker):
                tag = raw[len(marker) :].split()
                if tag[0] == "status" and current is not None:
                    statuses[current] = int(tag[1])
                    current = None
                else:
                    current = int(tag[0])
                continue
            if current is not None:
                # CRLF line ends (HTTP heads, CSV) shown as a terminal shows them; no trailing blanks.
                outputs[current].append(raw.rstrip())
        for output in outputs:
            while output and not output[-1]:
                output.pop()
        return list(zip(outputs, statuses, strict=True))


def _carry_sample_log(dataset: Path) -> None:
    """Gives an older dataset the sample's publication log of the versions before it.

    The sample carries the log of its earlier versions (`publication_log` in its dataset.toml), and
    a build with --previous refuses a log that forks from the previous snapshot's. An older
    dataset built with no log of its own starts another log; built with the sample's log cut
    before its own version, it appends the very entries the sample's log holds for it (a build is
    deterministic, the 95% bands' salts included), so the sample's build carries it on.
    """
    toml = dataset / "dataset.toml"
    text = toml.read_text(encoding="utf-8")
    if re.search(r"(?m)^publication_log\s*=", text):
        return
    version = re.search(r'(?m)^dataset_version\s*=\s*"([^"]+)"', text)
    if version is None:
        raise SystemExit(f"{toml}: no dataset_version")
    kept: list[str] = []
    cut = 0
    for line in (ROOT / "sample" / "publication-log.jsonl").read_text(encoding="utf-8").splitlines():
        kept.append(line)
        checkpoint = json.loads(line).get("checkpoint")
        if checkpoint:
            if checkpoint["dataset_version"] >= version[1]:
                break
            cut = len(kept)
    if cut:
        (dataset / "publication-log.jsonl").write_text("\n".join(kept[:cut]) + "\n", encoding="utf-8")
        toml.write_text(text + '\npublication_log = "publication-log.jsonl"\n', encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 naming every example whose output differs")
    mode.add_argument("--write", action="store_true", help="rewrite the outputs that differ")
    parser.add_argument("files", nargs="+", type=Path, help="Markdown files")
    parser.add_argument("--marks", type=Path, help="the marks binary (default: $MARKS_BIN, else target/debug/marks)")
    parser.add_argument("--python", type=Path, default=Path(sys.executable), help="`python` in the examples")
    args = parser.parse_args()
    marks = args.marks or Path(os.environ.get("MARKS_BIN") or ROOT / "target" / "debug" / "marks")
    marks = marks.resolve()
    if not marks.is_file():
        parser.error(f"no marks binary at {marks}: build it, or name one with $MARKS_BIN or --marks")
    python = args.python if args.python.is_absolute() else Path(shutil.which(str(args.python)) or args.python)

    total = 0
    differing: list[str] = []
    failures: list[str] = []
    # Every file read first: a malformed block is reported before anything is built.
    parsed = []
    for path in args.files:
        lines = path.read_text(encoding="utf-8").split("\n")
        parsed.append((path, lines, *parse(lines, path)))
    commands = [" ".join(e.command) for _, _, blocks, _ in parsed for b in blocks for e in b.examples]
    if any(re.search(r"\bjq\b", command) for command in commands) and shutil.which("jq") is None:
        parser.error("the examples pipe to jq, which is not installed (Debian: apt-get install jq)")
    with tempfile.TemporaryDirectory(prefix="doc-examples-") as work:
        runner = Runner(marks, python, Path(work))
        for path, lines, blocks, skipped in parsed:
            for line, reason in skipped:
                print(f"{path}:{line}: skipped: {reason}")
            replacements: list[tuple[Example, list[str]]] = []
            for block in blocks:
                outputs = runner.run(block)
                for example, (actual, status) in zip(block.examples, outputs, strict=True):
                    total += 1
                    command = "\n".join(example.command)
                    shown = [line.rstrip() for line in example.output]
                    want, got = normalise(shown, command), normalise(actual, command)
                    if want == got:
                        continue
                    where = f"{path}:{example.line}"
                    differing.append(where)
                    failed = f" (it exited with status {status})" if status != 0 else ""
                    if args.check or failed:
                        print(f"--- {where}{failed}: $ {command}")
                        sys.stdout.writelines(
                            line + "\n" for line in difflib.unified_diff(want, got, "the doc", "now", lineterm="")
                        )
                    # What a failing command prints (a missing tool, a broken set-up) is never written
                    # into a doc: every example here succeeds, whatever the status of the answer.
                    if failed:
                        failures.append(where)
                    else:
                        replacements.append((example, actual))
            if args.write and replacements:
                _rewrite(path, lines, replacements)
                print(f"{path}: {len(replacements)} example(s) rewritten")
    if args.check:
        if differing:
            print(f"{len(differing)} of {total} examples differ from what their commands print now:")
            for where in differing:
                print(f"  {where}")
            print("refresh them: python3 tools/doc_examples.py --write FILE.md ... (then read the prose around them)")
            return 1
        print(f"all {total} examples print what the docs show")
    elif failures:
        print(f"{len(failures)} example(s) left as they are, their commands failing: {', '.join(failures)}")
        return 1
    return 0


def _rewrite(path: Path, lines: list[str], replacements: list[tuple[Example, list[str]]]) -> None:
    for example, actual in sorted(replacements, key=lambda pair: pair[0].start, reverse=True):
        lines[example.start : example.end] = actual + example.separator
    path.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
