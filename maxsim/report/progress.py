"""A tiny progress reporter for long runs: one stderr line per phase, redrawn with ``\\r``.

Long work in maxsim (the functional run of a big grid, the timing run) takes an optional
*progress callback*: any callable ``progress(done, total, what, unit)``. ``what`` names the phase
(``"functional run"``, ``"timing"``), ``unit`` what is counted (``"CTAs"``, ``"warp instructions"``);
``done`` may be fractional (an estimate inside a batch of work), ``total`` may be ``None`` when it is
not known. The caller calls it often and cheaply; a reporter rate-limits what it does with it.

:class:`Progress` is such a callback. It draws at most ``rate`` lines per second, only when its
stream is a terminal or it is forced, and nothing at all when quiet::

    functional run  [##############----------]  58%  597/1,024 CTAs  12.3 s  ETA 8.9 s

A new ``what`` (or ``done`` starting over) ends the current line and starts another; ``close()``
ends the last one. No dependencies beyond the standard library.
"""

from __future__ import annotations

import os
import sys
import time


class Progress:
    """A progress callback that prints to ``stream`` (default: stderr).

    ``force``: draw even when the stream is not a terminal; default from the environment variable
    ``MAXSIM_PROGRESS`` (``1``: always, ``0``: never, unset: on a terminal). ``quiet``: never draw.
    ``delay``: seconds from the reporter's creation before the first line (a run that ends sooner
    prints nothing; the command line uses 2 s); a forced reporter draws at once.
    """

    def __init__(self, stream=None, *, force=None, quiet=False, rate=10.0, width=24, clock=time.monotonic,
                 delay=0.0):
        self.stream = stream if stream is not None else sys.stderr
        tty = getattr(self.stream, "isatty", None)
        try:
            is_tty = bool(tty()) if tty is not None else False
        except (ValueError, OSError):  # a closed stream
            is_tty = False
        if force is None:
            env = os.environ.get("MAXSIM_PROGRESS", "")
            force = True if env == "1" else (False if env == "0" else None)
            if force is False:
                is_tty = False
        self.enabled = not quiet and bool(force or is_tty)
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.width = width
        self.clock = clock
        # draw nothing until this many seconds after the reporter was made (unless forced)
        self.delay = 0.0 if force else delay
        self._born = clock()
        self._what = None
        self._start = 0.0
        self._last_draw = None
        self._last_done = None
        self._open = False  # a line is drawn and not yet ended
        self._len = 0
        self._finished = None  # (what, total) of the phase whose final line was drawn

    def __call__(self, done, total=None, what="", unit=""):
        if not self.enabled:
            return
        final = total is not None and done >= total
        if final and self._finished == (what, total):
            return  # that phase's last line is already drawn
        now = self.clock()
        if what != self._what or (self._last_done is not None and done < self._last_done):
            self.close()
            self._what = what
            self._start = now
            self._last_draw = None
        self._last_done = done
        self._finished = None
        if now - self._born < self.delay:
            return  # a short run stays silent
        if not final and self._last_draw is not None and now - self._last_draw < self.interval:
            return
        self._last_draw = now
        self._draw(done, total, what, unit, now - self._start)
        if final:
            self.close()
            self._finished = (what, total)

    def _draw(self, done, total, what, unit, elapsed):
        parts = [what] if what else []
        if total:
            frac = min(max(done / total, 0.0), 1.0)
            fill = int(round(frac * self.width))
            parts.append(f"[{'#' * fill}{'-' * (self.width - fill)}] {frac * 100:3.0f}%")
            parts.append(f"{_num(done)}/{_num(total)} {unit}".rstrip())
        else:
            parts.append(f"{_num(done)} {unit}".rstrip())
        parts.append(f"{elapsed:.1f} s")
        if total and 0 < done < total and elapsed > 1.0:
            parts.append(f"ETA {elapsed * (total - done) / done:.1f} s")
        text = "  ".join(parts)
        pad = " " * max(0, self._len - len(text))
        self._open = True  # before writing: an interruption inside the write still ends the line
        self._len = len(text)
        self.stream.write("\r" + text + pad)
        self.stream.flush()

    def close(self):
        """End the current line (the next report starts a new one)."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
        self._open = False
        self._len = 0
        self._what = None
        self._last_done = None


def _num(x):
    return f"{x:,.0f}"
