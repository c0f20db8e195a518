"""Coordinate shadows: while a `cute.experimental` kernel is traced, each tensor derived from one
of its tensor arguments by layout operations (divides, compositions, slices, tiles) is paired with
a coordinate tensor derived the same way from an identity tensor of the argument's shape. The
shadow says, for every element, its coordinate in the argument, which is what
`cute.experimental.copy` predicates on. Outside such a trace nothing is recorded (`active` is
False and each hook is one flag test)."""
from .. import _core

active = False
_shadows = {}  # id(tensor) -> (tensor, shadow, root shape); the tensor is kept so ids stay unique


class scope:
    """Records shadows for the duration of one kernel trace."""

    def __enter__(self):
        global active
        self._saved = (active, dict(_shadows))
        active = True
        _shadows.clear()
        return self

    def __exit__(self, *exc):
        global active
        active, saved = self._saved
        _shadows.clear()
        _shadows.update(saved)
        return False


def register_root(tensor):
    """`tensor` is a kernel argument: its shadow is the identity tensor of its shape."""
    _shadows[id(tensor)] = (tensor, _core.cute.make_identity_tensor(tensor.shape), tensor.shape)


def lookup(tensor):
    """(shadow, root shape) of `tensor`, or None when it is not derived from a kernel argument."""
    entry = _shadows.get(id(tensor))
    return None if entry is None or entry[0] is not tensor else entry[1:]


def follow(source, result, derive):
    """`result` was made from `source`; its shadow is `derive(shadow of source)`."""
    entry = lookup(source)
    if entry is None or not hasattr(result, "_with_layout"):
        return
    shadow, root_shape = entry
    _shadows[id(result)] = (result, derive(shadow), root_shape)
