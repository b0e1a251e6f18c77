"""Every ```python block of README.md runs, as it is written, against the live server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import PACKAGE_DIR, Server

README = (PACKAGE_DIR / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```python\n(.*?)^```$", README, flags=re.M | re.S)


def test_the_readme_has_examples() -> None:
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block(
    index: int,
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MARKS_API_KEY", server.keys["enterprise"])
    monkeypatch.setenv("MARKS_BASE_URL", server.base_url)
    monkeypatch.chdir(tmp_path)
    code = compile(BLOCKS[index], f"README.md python block {index + 1}", "exec")
    exec(code, {"__name__": "__readme__"})  # noqa: S102
    assert capsys.readouterr().out  # every example shows something
