"""maxsim.memo.Kept: values made once per key, made again for another owner, bounded."""

from maxsim.memo import Kept


def test_a_value_is_made_once_and_again_for_another_owner():
    kept = Kept(4)
    made = []

    def make(v):
        return lambda: made.append(v) or v

    a, b = object(), object()
    assert kept.get(1, make("x"), owner=a) == "x"
    assert kept.get(1, make("y"), owner=a) == "x"  # kept: not made again
    assert made == ["x"]
    assert kept.get(1, make("z"), owner=b) == "z"  # the same key for another owner (a reused id)
    assert kept.get(1, make("w"), owner=b) == "z"
    assert made == ["x", "z"]


def test_it_is_emptied_past_its_bound():
    kept = Kept(2)
    for k in range(3):
        kept.get(k, lambda k=k: k)
    assert len(kept) == 3  # (emptied only when more than 2 are held as a new one comes)
    kept.get(3, lambda: 3)
    assert len(kept) == 1
    made = []
    assert kept.get(0, lambda: made.append(0) or 0) == 0 and made == [0]  # made again after emptying
