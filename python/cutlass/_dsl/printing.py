"""cute.printf: a run-time print from host or device code."""
from .. import _core
from . import context
from .address_space import AddressSpace
from .numeric import Numeric, as_numeric

# Layout-algebra values print in CuTe notation with their run-time leaves (C++ builds the format).
_ALGEBRA = (tuple, list, _core.layout.Layout, _core.layout.ComposedLayout, _core.layout.Swizzle,
            _core.layout.ScaledBasis)


def _placeholders(fmt):
    """(start, end) of each argument placeholder of `fmt`, in order: `{}` or a C conversion."""
    import re
    spans = []
    for m in re.finditer(r"\{\}|%%|%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z)?[diouxXeEfgGcsp]", fmt):
        if m.group() != "%%":
            spans.append(m.span())
    return spans


def _is_pointer(v):
    return isinstance(v, _core.cute._Pointer)


def _is_tensor(v):
    return isinstance(v, _core.cute._Tensor)


def printf(*args, end="\n", loc=None, ip=None):
    if not args:
        raise ValueError("printf needs at least one argument")
    if isinstance(args[0], str):
        fmt, values = args[0] + end, args[1:]
    else:
        fmt, values = ", ".join(["{}"] * len(args)) + end, args
    if any(_is_pointer(v) or _is_tensor(v) for v in values):
        return _printf_with_memory(fmt, values)
    _printf(fmt, values)


def _printf_with_memory(fmt, values):
    """Pointers print as print_tensor's raw_ptr(0x...: type, space, align<n>); a tensor prints as
    print_tensor renders it, in place of its placeholder."""
    spans = _placeholders(fmt)
    if len(spans) != len(values):
        raise ValueError(f"printf: {len(spans)} placeholders for {len(values)} arguments in {fmt!r}")
    out_fmt, out_values, last = "", [], 0
    for (start, stop), v in zip(spans, values):
        out_fmt += fmt[last:start]
        last = stop
        if _is_pointer(v):
            align = f"align<{v.alignment}>"
            swz = f", {v.swizzle}" if v.swizzle is not None else ""
            element = str(v)[len("ptr<"):].split(",")[0]
            out_fmt += f"raw_ptr(0x%016x: {element}, {_space_name(v)}, {align}{swz})"
            out_values.append(v.toint())
        elif _is_tensor(v):
            if out_fmt:
                _printf(out_fmt, out_values)
            _core.cute.print_tensor(v, False)
            out_fmt, out_values = "", []
            if fmt[last:].startswith("\n"):
                last += 1  # print_tensor ends its own line
        else:
            out_fmt += fmt[start:stop]
            out_values.append(v)
    out_fmt += fmt[last:]
    if out_fmt:
        _printf(out_fmt, out_values)


def _space_name(ptr):
    return str(AddressSpace(ptr._memspace))


def _printf(fmt, values):
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
