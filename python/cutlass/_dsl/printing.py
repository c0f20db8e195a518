"""cute.printf: a run-time print from host or device code."""
from . import context
from .numeric import Numeric, as_numeric


def printf(*args, end="\n", loc=None, ip=None):
    if not args:
        raise ValueError("printf needs at least one argument")
    if isinstance(args[0], str):
        fmt, values = args[0] + end, args[1:]
    else:
        fmt, values = ", ".join(["{}"] * len(args)) + end, args
    nums = []
    for v in values:
        if isinstance(v, (Numeric, bool, int, float)):
            nums.append(as_numeric(v)._n)
        elif hasattr(v, "_fail"):
            v._fail()  # a variable that is undefined after a dynamic region
        else:
            raise TypeError(f"unsupported argument type in printf, got {type(v)}")
    context.tracer().printf(fmt, nums)
