"""docs/memory-hierarchy.md: its table of the memory keys states the values the GM204 config has,
and every key it lists carries in gm204.toml the source the table names."""

import re
from pathlib import Path

from maxsim.arch.config import load_config

DOC = Path(__file__).resolve().parents[1] / "docs" / "memory-hierarchy.md"
TOML = Path(__file__).resolve().parents[1] / "maxsim" / "arch" / "gm204.toml"


def _table_rows():
    rows = re.findall(r"^\| `([\w.]+)` \| ([^|]+) \| ([^|]+) \|", DOC.read_text(), re.M)
    assert len(rows) >= 15
    return rows


def test_the_table_states_the_configs_values():
    cfg = load_config("gm204")
    for key, value, _ in _table_rows():
        section, name = key.split(".")
        actual = getattr(getattr(cfg, section), name)
        value = value.strip()
        if isinstance(actual, bool):
            assert value == str(actual).lower(), key
        elif isinstance(actual, str):
            assert value == actual, key
        else:
            assert float(value) == actual, key


def test_each_keys_toml_comment_names_the_tables_source():
    text = TOML.read_text()
    section = None
    comments = {}
    for line in text.splitlines():
        m = re.match(r"^\[(\w+)\]", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^(\w+)\s*=.*?#(.*)$", line)
        if m:
            key = f"{section}.{m.group(1)}"
            comments[key] = m.group(2)
        elif line.startswith(" ") and line.strip().startswith("#") and section and comments:
            comments[key] += line
    for key, _, source in _table_rows():
        for name in re.findall(r"\[([\w-]+)\]", source):
            assert f"[{name}]" in comments[key], (key, name)
        if source.strip() == "choice":
            assert "choice" in comments[key], key
