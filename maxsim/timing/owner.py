"""Parts of a model object that refer back to it weakly: an SM's scheduler views, a compiled memory
system's L2 view, servers and TLB arrays. The owner holds its parts; a part's strong reference back
would make a reference cycle, and a finished launch's SMs and memory system (and their arrays, a
few MB) would then stay alive until the garbage collector next runs, where freed by reference
counting their memory goes back at once and the next launch reuses it.

A part keeps ``_owner`` (a :func:`weakref.ref`); copied deeply or pickled it takes its owner's
copy (which the copy of the owner holds)."""

from __future__ import annotations

import weakref


def _dead():
    return None


class WeakOwner:
    """Mixin: ``self._owner`` refers weakly to the object that holds this part (see the module
    docstring); a deep copy or a pickle carries the owner strongly and refers to it weakly again."""

    __slots__ = ()

    def _set_owner(self, owner):
        object.__setattr__(self, "_owner", weakref.ref(owner))

    def __getstate__(self):
        state = dict(getattr(self, "__dict__", {}))
        for cls in type(self).__mro__:
            for name in getattr(cls, "__slots__", ()):
                if name not in state and hasattr(self, name):
                    state[name] = getattr(self, name)
        if "_owner" in state:
            state["_owner"] = state["_owner"]()
        return state

    def __setstate__(self, state):
        for name, value in state.items():
            if name == "_owner":
                value = _dead if value is None else weakref.ref(value)
            object.__setattr__(self, name, value)
