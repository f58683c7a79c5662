"""``--set KEY=VALUE`` for the benchmarks: a configuration key and its value as TOML reads it."""

from __future__ import annotations

import argparse
import tomllib


def setting(text):
    """argparse type of ``--set``: ``"gpu.sms=4"`` -> ``("gpu.sms", 4)``."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: expected KEY=VALUE (e.g. gpu.sms=4)")
    try:
        return key.strip(), tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: the value is not a TOML value ({e})") from None
