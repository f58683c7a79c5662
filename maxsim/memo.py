"""Values made once and kept for the launches that ask for them again (a kernel launched many times
alike): a bounded memo, emptied when it holds more than ``most`` keys, so that launches that never
repeat do not grow it (a simulator setting, not a model parameter)."""

from __future__ import annotations


class Kept:
    """``get(key, make)``: the value kept for ``key``, else ``make()`` kept. A key that names an
    object by ``id()`` (a kernel, its instructions) gives that object as ``owner``: a value kept for
    another object that had the same id (the first one freed) is made again."""

    def __init__(self, most: int):
        self.most = most
        self._kept = {}

    def get(self, key, make, owner=None):
        hit = self._kept.get(key)
        if hit is not None and hit[0] is owner:
            return hit[1]
        value = make()
        if len(self._kept) > self.most:
            self._kept.clear()
        self._kept[key] = (owner, value)
        return value

    def __len__(self):
        return len(self._kept)
