"""The ``maxsim`` command line: run, analyze, asm, disasm, configs, plot, compare, validate, sweep, cache.

One module per command, each with ``add_parser(sub)`` (its options; the parser's ``handler`` is the
function that runs it); :mod:`.common` holds what several commands share. Every error a user can
cause (a missing file, a malformed kernel, a bad size, a bad config) is printed as one line on
stderr with exit status 2; no Python traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from ..errors import MaxsimError, SourceWarning
from . import analyze, asm, cache, compare, configs, plot, run, sweep, validate
from .common import PROGRESS_DELAY, WORKLOADS, Parser, UsageError, as_program, imported, subject
from .run import run_sass_file

EXAMPLES = """examples:
  maxsim run sgemm_64                               generate, run and time the 64-thread SGEMM
  maxsim run sgemm_128 --m 512 --n 512 --k 256      the 256-thread kernel on a bigger problem
  maxsim run sgemm_64 --sass sgemm_final_64.sass    maxas's own kernel file in the same harness
  maxsim run bench.sass --grid 2 --block 128        a parameterless kernel of your own
  maxsim run workloads/kernels/vecadd.sass --grid 8 --block 128 --param n=1000 --param a=a --param b=b \
      --param c=c --buffer a=a.npy:in --buffer b=b.npy:in --buffer c=zeros:1000 --out results
                                                    a kernel with parameters and buffers (c saved as results/c.npy)
  maxsim run sgemm_64 --warps-per-scheduler 3       maxas's "Max64-3": 6 CTAs per SM (129 registers)
  maxsim run sgemm_64 --report run.html             the source view: every SASS line with its stalls,
                                                    bank conflicts, reuse and hit rates (one HTML page)
  maxsim compare --workload sgemm_64 --warps-per-scheduler 3 --json
  maxsim analyze sgemm_64 --traversal zigzag        static register-bank / reuse analysis
  maxsim plot conflicts -o conflicts.png            bank conflicts and reuse of every variant
  maxsim validate --quick -o report.html           model against hardware: table and HTML report
  maxsim sweep l2_dram.toml -o gflops.png --x gpu.dram_bandwidth_gbs
                                                    a design-space sweep into l2_dram.parquet / .csv
  maxsim configs                                    the shipped architecture configs
  maxsim asm kernel.sass -o kernel_final.sass       assemble the maxas source language
  maxsim asm kernel.sass -o kernel.cubin            ... or write a cubin for sm_52
  maxsim disasm kernel.cubin                        a cubin in maxas's text form
  maxsim cache info                                 the caches of compiled code and results (maxsim cache clear)
  maxsim asm --check kernel.cu                      check a kernel's control codes (any kernel file)
  maxsim run saxpy.cu --kernel saxpy --grid 4 --block 256 --param a=2.0 --param x=x --param y=y \
      --param n=1000 --buffer x=x.npy:in --buffer y=y.npy
                                                    CUDA C compiled for sm_52 (pip install "maxsim[cuda]")

Run `maxsim COMMAND --help` for the options of a command. Errors are one line on stderr, exit status 2.
"""


def _parser():
    p = Parser(
        prog="maxsim", epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A cycle-approximate simulator of the NVIDIA Maxwell streaming multiprocessor: "
                    "runs SASS kernels (maxas's text and source forms, cubins, CUDA C and PTX "
                    "compiled for sm_52), functionally and in time.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    run.add_parser(sub)
    analyze.add_parser(sub)
    asm.add_parser(sub)
    asm.add_disasm_parser(sub)
    configs.add_parser(sub)
    compare.add_parser(sub)
    sweep.add_parser(sub)
    validate.add_parser(sub)
    plot.add_parser(sub)
    cache.add_parser(sub)
    return p


def _small_pages():
    """Ask numpy not to back large arrays with transparent huge pages. The SM timing core keeps
    trace arrays with a row per warp slot of which a run touches a few; with huge pages each touched
    row commits a whole 2 MB page (peak memory of ``maxsim run sgemm_64``: 400 MB instead of 250)."""
    import numpy as np
    setter = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_set_madvise_hugepage", None)
    if setter is not None:
        setter(False)


def _name_the_file(e, subject):
    """The one-line message of error ``e``, starting with the file it is about when the message
    does not name one itself (launch, occupancy and timing errors speak of the kernel only)."""
    from ..engine import EngineError
    from ..errors import ConfigError, SassParseError
    msg = str(e)
    if subject is None or isinstance(e, (UsageError, ConfigError, SassParseError, EngineError)) or subject in msg:
        return msg
    return f"{subject}: {msg}"


def _quiet_stdout():
    """Send what is left of stdout to /dev/null: its reader (``head``) has gone, and Python would
    otherwise complain while flushing it at exit."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError:
        pass


def _unrecognized(parser, argv, extra):
    """Arguments no option takes: a file name after --json gets its own advice."""
    for i, a in enumerate(argv[:-1]):
        if a == "--json" and argv[i + 1] == extra[0]:
            parser.error(f"--json takes no file name (got {extra[0]!r}): it prints the JSON object; "
                         f"redirect it to write a file, e.g. `... --json > {extra[0]}`")
    parser.error(f"unrecognized arguments: {' '.join(extra)}")


def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
    """A SourceWarning (text maxsim reads as maxas does, probably a slip) as one line naming the
    place; other warnings as Python shows them."""
    if issubclass(category, SourceWarning):
        print(f"maxsim: warning: {message}", file=sys.stderr)
    else:
        _default(message, category, filename, lineno, file, line)


def main(argv=None):
    if argv is None:  # the maxsim program (console script, python -m maxsim.cli), not a call from Python
        as_program()
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _main(argv)


def _main(argv=None):
    args = None
    try:
        _small_pages()
        parser = _parser()
        args, extra = parser.parse_known_args(argv)
        if extra:
            _unrecognized(parser, sys.argv[1:] if argv is None else list(argv), extra)
        if args.command is None:
            parser.print_help()
            return 2
        if not getattr(args, "says_when_imported", False):
            imported()  # (`run` says so itself, once it has imported the timing model)
        return args.handler(args)
    except MaxsimError as e:
        print(f"maxsim: error: {_name_the_file(e, subject(args))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("maxsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        _quiet_stdout()
        return 1


__all__ = ["main", "run_sass_file", "UsageError", "WORKLOADS", "PROGRESS_DELAY"]
