"""`cutlass.utils.sm90`: the same helpers as `cutlass.utils.hopper_helpers`."""
from .hopper_helpers import *  # noqa: F401,F403
from .hopper_helpers import __all__  # noqa: F401
