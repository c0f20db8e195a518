"""cute.printf: a run-time print from host or device code."""
from .. import _core
from . import context
from .numeric import Numeric, as_numeric

# Layout-algebra values print in CuTe notation with their run-time leaves (C++ builds the format).
_ALGEBRA = (tuple, list, _core.layout.Layout, _core.layout.ComposedLayout, _core.layout.Swizzle,
            _core.layout.ScaledBasis)


def printf(*args, end="\n", loc=None, ip=None):
    if not args:
        raise ValueError("printf needs at least one argument")
    if isinstance(args[0], str):
        fmt, values = args[0] + end, args[1:]
    else:
        fmt, values = ", ".join(["{}"] * len(args)) + end, args
    items = []
    structured = False
    for v in values:
        if isinstance(v, (Numeric, bool, int, float)):
            items.append(as_numeric(v)._n)
        elif hasattr(v, "_fail"):
            v._fail()  # a variable that is undefined after a dynamic region
        elif isinstance(v, _ALGEBRA):
            items.append(v)
            structured = True
        else:
            raise TypeError(f"unsupported argument type in printf, got {type(v)}")
    tracer = context.tracer()
    if structured:
        _core.layout.printf(fmt, items)
    else:
        tracer.printf(fmt, items)
