"""`cutlass.base_dsl`: the DSL core's runtime helpers, typing names and architecture enum that
libraries import."""
from . import arch, runtime, typing  # noqa: F401
