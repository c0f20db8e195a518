"""`cutlass.register_jit_arg_adapter`: JIT-argument protocols for types the user cannot change.

An adapter is a class constructed from the argument (`Adapter(arg)`) that implements the
protocol methods (`__c_pointers__`, `__get_mlir_types__`, `__new_from_mlir_values__`, or
`__extract_mlir_values__` for kernel arguments). The argument classification of @jit functions
asks `adapt(value)` first: an instance of a registered type (or of a subclass) is replaced by
its adapter, everything else passes through unchanged."""
_ADAPTERS = {}


def register_jit_arg_adapter(arg_type):
    """Decorator: `@register_jit_arg_adapter(MyType) class MyTypeAdapter: ...`."""
    if not isinstance(arg_type, type):
        raise TypeError(f"register_jit_arg_adapter takes the class to adapt, got {arg_type!r}")

    def register(adapter):
        if not callable(adapter):
            raise TypeError(f"a JIT argument adapter must be callable (a class taking the argument), got {adapter!r}")
        _ADAPTERS[arg_type] = adapter
        return adapter

    return register


def adapter_for(value_type):
    """The adapter registered for `value_type` or its nearest registered base class (or None)."""
    for cls in getattr(value_type, "__mro__", ()):
        adapter = _ADAPTERS.get(cls)
        if adapter is not None:
            return adapter
    return None


def adapt(value):
    """The adapter object for `value` when its type has one, else `value`."""
    if not _ADAPTERS:
        return value
    adapter = adapter_for(type(value))
    return value if adapter is None else adapter(value)
