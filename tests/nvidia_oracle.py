"""NVIDIA's disassemblers, the oracle of the codec's and the cubin tests, set up by the tests
themselves: cuobjdump and nvdisasm 12.8.55 (the last release that reads sm_5x) ship in the Triton
3.3.1 wheel. The wheel (155 MB) is downloaded once with pip into maxsim's cache folder and only the
two binaries are kept (triton is not installed: the test environment stays the project's).

``MAXSIM_CUOBJDUMP`` / ``MAXSIM_NVDISASM``, when set, name the tools and nothing is downloaded;
``MAXSIM_ORACLE=0`` turns the download off (the oracle's tests then skip, saying why).
``python3 tests/nvidia_oracle.py FOLDER`` unpacks the two binaries into FOLDER (the CI keeps them
between its runs).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "triton==3.3.1"
TOOLS = ("cuobjdump", "nvdisasm")
ENV = {"cuobjdump": "MAXSIM_CUOBJDUMP", "nvdisasm": "MAXSIM_NVDISASM"}


def default_folder() -> Path:
    from maxsim.cache import cache_dir
    return cache_dir() / "nvidia-bin-12.8"


def unpack(folder) -> dict:
    """The two binaries in ``folder``, fetched when missing: {tool: path}. Raises OSError or
    subprocess.CalledProcessError when they cannot be fetched."""
    folder = Path(folder)
    paths = {tool: folder / tool for tool in TOOLS}
    if all(os.access(p, os.X_OK) for p in paths.values()):
        return paths
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", WHEEL, "-d", tmp],
                       check=True, stdout=subprocess.DEVNULL)
        wheel = next(Path(tmp).glob("triton-*.whl"))
        with zipfile.ZipFile(wheel) as z:
            for tool, path in paths.items():
                part = path.with_suffix(".part")
                part.write_bytes(z.read(f"triton/backends/nvidia/bin/{tool}"))
                part.chmod(part.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
                os.replace(part, path)
    return paths


def set_up() -> str | None:
    """Point ``MAXSIM_CUOBJDUMP`` / ``MAXSIM_NVDISASM`` at the tools (fetched once); None when they
    are ready, else why not."""
    if all(os.environ.get(v) for v in ENV.values()):
        return None
    if os.environ.get("MAXSIM_ORACLE") == "0":
        return "MAXSIM_ORACLE=0: NVIDIA's disassemblers are not fetched"
    try:
        paths = unpack(default_folder())
    except (OSError, subprocess.CalledProcessError, StopIteration, KeyError, zipfile.BadZipFile) as e:
        return f"could not fetch NVIDIA's disassemblers ({WHEEL}) with pip: {e}"
    for tool, path in paths.items():
        os.environ.setdefault(ENV[tool], str(path))
    return None


if __name__ == "__main__":
    for tool, path in unpack(sys.argv[1]).items():
        print(path)
