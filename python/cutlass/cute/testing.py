"""cute.testing: the runtime assertion (the benchmarking helpers live alongside it)."""
from .._dsl.assertions import assert_  # noqa: F401
