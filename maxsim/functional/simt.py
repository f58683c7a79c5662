"""SIMT divergence and reconvergence: the per-warp reconvergence stack of Fermi-Maxwell.

The model is the one NVIDIA's SASS reference documents for SPA 5.0 (Maxwell) [nv-sass] (opcode
pages SYNC, BRK/PBK, CONT/PCNT) and the post-dominator stack of Fung et al. (MICRO 2007):

* ``SSY L`` / ``PBK L`` / ``PCNT L`` push a token with the warp's active mask and the target L;
  execution goes on at the next instruction.
* A branch whose active lanes disagree *diverges*: the warp pushes a DIV token holding the taken
  lanes and the branch target, and runs the fall-through lanes first (choice: which side runs
  first is not documented; running the fall-through side first keeps the stack from growing in a
  loop whose back edge diverges). When the running lanes are all done with their path, the token
  is popped and the taken lanes run.
* ``SYNC`` ends a path: the lanes that execute it wait. ``BRK`` / ``CONT`` make the lanes that
  execute them wait at the nearest PBK / PCNT token. When no lane of the warp is left active the
  stack is popped: a DIV token runs its lanes at its target; an SSY, PBK or PCNT token restores the
  mask it pushed (less the lanes that have exited or broken out of it) and continues at its target
  ("From the view of any one thread, execution goes from the SYNC instruction to the SSY target"
  [nv-sass SYNC]; "when all active threads have executed a BRK, the stack will be unrolled until a
  matching PBK token is found ... execution will resume at the address specified by the PBK, with
  the active mask ... in the PBK" [nv-sass BRK]).
* ``EXIT`` removes its lanes from the warp and from every token; the warp ends when the stack is
  empty and no lane is active.
* ``CAL`` (warp-uniform) pushes a CAL token holding the active mask and the return address;
  ``RET`` makes the lanes that execute it wait at the nearest CAL token, as SYNC at an SSY token
  (ptxas returns from a subroutine with a guarded ``@!P0 RET`` whose lanes may disagree: the
  slow paths of IEEE division and square root). When no lane is left active the token is popped:
  the lanes of the call (less those that exited) go on at the return address. The CRS stack
  holds call entries with the SSY/PBK ones [nv-sass: CAL, RET "Call/Return/Sync stack"].

A group of warps (:class:`maxsim.functional.executor.Group`) shares one stack structure: the token
kinds and targets are the same for every warp of the group, the masks are per lane. Warps whose
paths differ are split into separate groups.
"""

from __future__ import annotations

import numpy as np

from ..errors import SimulationError
from ..jit import njit

PUSH = ("SSY", "PBK", "PCNT")
WAIT = {"SYNC": "SSY", "BRK": "PBK", "CONT": "PCNT", "RET": "CAL"}
OPS = PUSH + tuple(WAIT)
DIV = "DIV"


@njit(cache=True)
def warp_lanes(lanes):
    """Per warp, the sum of a per-lane array over its 32 lanes (of a mask: how many lanes hold),
    in one compiled pass (numpy's ``lanes.reshape(-1, 32).sum(axis=1)`` costs ~6x as much)."""
    nw = lanes.shape[0] // 32
    out = np.empty(nw, dtype=np.int64)
    for w in range(nw):
        s = 0
        for i in range(w * 32, w * 32 + 32):
            s += lanes[i]
        out[w] = s
    return out


def signature(g):
    """What two groups must share to merge: their token kinds and targets."""
    return tuple((kind, pc) for kind, pc, _ in g.simt)


def push(g, instr):
    """SSY / PBK / PCNT: a token with the active lanes and the target."""
    g.simt.append((instr.opcode, instr.target, g.active.copy()))


def call(g, ret_pc):
    """CAL: a token with the active lanes and the return address."""
    g.simt.append(("CAL", ret_pc, g.active.copy()))


def wait(ctx, instr, g, lanes):
    """SYNC / BRK / CONT executed by ``lanes``: they leave the active mask and every token above
    the nearest token of the matching kind (they now wait at that token)."""
    kind = WAIT[instr.opcode]
    at = next((n for n in range(len(g.simt) - 1, -1, -1) if g.simt[n][0] == kind), -1)
    if at < 0:
        pos = int(np.flatnonzero(lanes)[0])
        raise SimulationError(ctx.where(instr, g, pos).format(
            "RET with an empty call stack" if kind == "CAL" else
            f"{instr.opcode} without a matching {kind} on the warp's reconvergence stack"))
    keep = ~lanes
    g.active = g.active & keep
    g.simt = g.simt[:at + 1] + [(k, pc, m & keep) for k, pc, m in g.simt[at + 1:]]
    g.full = False


def leave(g, lanes):
    """EXIT by ``lanes``: they leave the warp, its active mask and every token."""
    keep = ~lanes
    g.active = g.active & keep
    g.simt = [(k, pc, m & keep) for k, pc, m in g.simt]
    g.full = bool(g.active.all())


def diverge(g, taken, target):
    """A divergent branch in every warp of g: push the taken lanes at ``target``; the others run on."""
    g.simt.append((DIV, target, taken & g.active))
    g.active = g.active & ~taken
    g.full = False


def settle(g):
    """Pop the stack of the warps of g that have no active lane left.

    Returns ``(groups, gone)``: the groups to run (g itself, unchanged, when every warp has active
    lanes; else g and groups taken from it), and the batch warp ids that ended (no active lane and
    an empty stack)."""
    out, gone = [], []
    pending = [g]
    while pending:
        x = pending.pop()
        alive = warp_lanes(x.active) > 0
        if alive.all():
            out.append(x)
            continue
        if not x.simt:  # (the warps without an active lane end: nothing of theirs to take)
            if alive.any():
                out.append(x.take(np.flatnonzero(alive)))
                out[-1].pc = x.pc
            gone.append(x.warps[~alive])
            continue
        if alive.any():
            out.append(x.take(np.flatnonzero(alive)))
            out[-1].pc = x.pc
            x = x.take(np.flatnonzero(~alive))
        kind, pc, mask = x.simt.pop()
        if kind == "CAL":
            x.stack.pop()
        x.active = mask
        x.full = bool(mask.all())
        x.pc = pc
        pending.append(x)
    return out, (np.concatenate(gone) if gone else np.zeros(0, np.int64))
