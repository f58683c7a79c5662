"""Headless Chromium for the tests of the HTML pages (the validation report, the source page):
load a page with no network, read the DOM after its scripts ran, take a screenshot."""

from __future__ import annotations

import os
import shutil
import subprocess


def chromium():
    """Path of a Chromium (or Chrome) binary, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


SKIP_REASON = "Chromium is not installed (Debian: apt-get install chromium)"


def _command(tmp_path):
    # no network: every host name resolves to nothing, and the page must load regardless
    return [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
            f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000"]


def dump_dom(page, tmp_path) -> str:
    """The DOM of ``page`` (a path) once loaded and its scripts have run."""
    return subprocess.run(_command(tmp_path) + ["--dump-dom", page.as_uri()], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "HOME": str(tmp_path)}).stdout


def screenshot(page, shot, tmp_path, size="1400,900"):
    """Write a PNG of ``page`` at window ``size`` to ``shot``."""
    subprocess.run(_command(tmp_path) + [f"--window-size={size}", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
