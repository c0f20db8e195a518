"""`cutlass.base_dsl`: the DSL core's runtime helpers and typing names that libraries import."""
from . import runtime, typing  # noqa: F401
