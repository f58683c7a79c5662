"""What several commands share: the parser's one-line errors, argument types, the residency options
(run, compare), the engine and result-cache options (compare, sweep, validate)."""

from __future__ import annotations

import argparse

from ..errors import MaxsimError

WORKLOADS = ("sgemm_64", "sgemm_128")
PROGRESS_DELAY = 2.0  # seconds before a run draws its progress line (a short run prints none)


class UsageError(MaxsimError):
    pass


# ---- Python's cycle collector in the maxsim program ----
# A full collection traverses every object the process holds; in a maxsim process most of them
# (~100,000) are the imported modules' own (numba's types and registries, maxsim's tables), alive
# until the process ends. `maxsim run sgemm_64` spent a fifth of its time in the collector: full
# collections while it imported and ran, one more when the interpreter exits, and ~20 younger ones
# while the imports made their objects. The maxsim program does not collect until the command has
# imported what it runs (:func:`imported`), then moves the objects made so far out of the
# collector's reach (gc.freeze) and collects as usual: later collections traverse only the objects
# made since; everything is frozen when it exits. A call of :func:`maxsim.cli.main` from Python
# leaves the caller's collector alone (frozen objects are never freed, garbage included).
_PROGRAM = []  # [True] in the maxsim program (console script, python -m maxsim.cli)


def as_program():
    """This process is the maxsim program: no cycle collection until :func:`imported`; every object
    frozen when it exits (the interpreter's last collection then has none of the modules' to
    traverse)."""
    import atexit
    import gc
    if not _PROGRAM:
        _PROGRAM.append(True)
        gc.disable()
        atexit.register(gc.freeze)


def imported():
    """The command has imported the modules it runs: in the maxsim program, the objects made so far
    leave the cycle collector's reach (gc.freeze) and collection resumes."""
    if _PROGRAM:
        import gc
        gc.freeze()
        gc.enable()


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``maxsim run: error: ... (see `maxsim run --help`)``, status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def size(text):
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def shape(text):
    try:
        parts = [int(p, 0) for p in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected X, X,Y or X,Y,Z, got {text!r}") from None
    if not 1 <= len(parts) <= 3 or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"expected X, X,Y or X,Y,Z with positive numbers, got {text!r}")
    return tuple(parts) + (1,) * (2 - len(parts))


def sizes_list(text):
    try:
        out = [int(x, 0) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 512,1024, got {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected positive sizes like 512,1024, got {text!r}")
    return out


def occupancy_options(p, compare=False):
    """--regs / --warps-per-scheduler / --ctas-per-sm: one of them."""
    what = "every kernel of the comparison" if compare else "the kernel"
    g = p.add_mutually_exclusive_group()
    g.add_argument("--regs", type=size, default=None, metavar="N",
                   help=f"{what} declares N registers per thread (its code unchanged: at least what it "
                        f"uses, at most 255); more registers, fewer resident CTAs")
    g.add_argument("--warps-per-scheduler", type=size, default=None, metavar="W",
                   help=f"run {what} at W resident warps per scheduler: declares the fewest registers "
                        f"that give exactly that residency (e.g. sgemm_64 at 3: 129 registers, 6 CTAs "
                        f"per SM); an error if none does")
    g.add_argument("--ctas-per-sm", type=size, default=None, metavar="C",
                   help=f"run {what} at C resident CTAs per SM (the fewest registers that give it)")


def occupancy_choice(args):
    """The residency option given, as ``(flag text, {"regs"|"warps_per_scheduler"|"ctas_per_sm": value})``,
    or ``(None, None)``."""
    for key, flag in (("regs", "--regs"), ("warps_per_scheduler", "--warps-per-scheduler"),
                      ("ctas_per_sm", "--ctas-per-sm")):
        value = getattr(args, key)
        if value is not None:
            return f"{flag} {value}", {key: value}
    return None, None


def engine_options(p):
    """--jobs / --scheduler / --no-cache: where the independent predictions run, and the cache."""
    p.add_argument("--jobs", metavar="N", type=size, default=None,
                   help="worker processes of the local Dask cluster the predictions run on (default: the "
                        "number of CPUs; 1 runs them in this process)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                   help="run the predictions on the workers of an existing Dask cluster (started with "
                        "`dask scheduler` and `dask worker`, or dask-jobqueue); default: the environment "
                        "variable MAXSIM_SCHEDULER, else a local cluster")
    p.add_argument("--no-cache", action="store_true",
                   help="recompute every prediction (default: a point computed before with the same kernel, "
                        "config, launch and model version is read back from the result cache, "
                        "$MAXSIM_CACHE_DIR or the user cache directory)")


def engine_and_cache(args, workload_cache):
    from ..engine import Engine
    engine = Engine(jobs=args.jobs, scheduler=args.scheduler)
    return engine, (None if args.no_cache else workload_cache())


def is_kernel_file(target) -> bool:
    return target.lower().endswith((".sass", ".cubin", ".cu", ".ptx"))


def subject(args):
    """The file a command is about, as its errors name it: the kernel file or workload of
    ``run`` / ``analyze``, or None."""
    target = getattr(args, "target", None)
    if target is None:
        return getattr(args, "spec", None)  # sweep: its spec
    return getattr(args, "sass", None) or target
