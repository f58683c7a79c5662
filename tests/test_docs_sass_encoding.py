"""docs/sass-encoding.md's example runs as printed and prints what the page shows."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "sass-encoding.md"


def test_the_example_prints_what_the_page_shows():
    text = PAGE.read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    shown = re.search(r"prints\n\n```text\n(.*?)```", text, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/sass-encoding.md", "exec"), {"__name__": "__docs__"})
    assert out.getvalue() == shown
