"""`cutlass.utils.sm100`: the same helpers as `cutlass.utils.blackwell_helpers`."""
from .blackwell_helpers import *  # noqa: F401,F403
from .blackwell_helpers import __all__  # noqa: F401
