"""What `__extract_mlir_values__` of a DSL number or tensor returns: its IR values, as a list that
remembers the object they came from. A user class may return one such list per part (the CuTe
DSL docs' DynamicExpression example: `(self._tensor.__extract_mlir_values__(),
self._offset.__extract_mlir_values__())`); kernel-argument binding then rebuilds each part from
its list and hands the parts to the class's `__new_from_mlir_values__`."""


class ExtractedValues(list):
    """IR values of `template` (a DSL number or tensor), which rebuilds from them."""

    def __init__(self, values, template):
        super().__init__(values)
        self.template = template


def rebuild_parts(groups, make_values):
    """The parts of a grouped extraction: each group (a list of IR values) becomes the object its
    template rebuilds from `make_values(group)`, or the new values when it has no template."""
    parts = []
    for group in groups:
        if isinstance(group, (list, tuple)):
            values = make_values(list(group))
            template = getattr(group, "template", None)
            parts.append(template.__new_from_mlir_values__(values) if template is not None else values)
        else:
            parts.append(make_values([group])[0])
    return parts


def is_grouped(values):
    return any(isinstance(v, (list, tuple)) for v in values)


def flat_values(values):
    """The IR values of an extraction, grouped or not, in one list."""
    if not is_grouped(values):
        return list(values)
    return [x for v in values for x in (v if isinstance(v, (list, tuple)) else [v])]


def rebuild_from_flat(obj, values):
    """`obj` rebuilt from `values`, new IR values in the order flat_values gives its own."""
    groups = obj.__extract_mlir_values__()
    if not is_grouped(groups):
        return obj.__new_from_mlir_values__(list(values))
    it = iter(values)
    return obj.__new_from_mlir_values__(rebuild_parts(groups, lambda group: [next(it) for _ in group]))
