"""Where NVIDIA's CuTe DSL examples are, for the tests that load them at run time: the folder named
by OPENCUTE_NVIDIA_EXAMPLES, else ../shared/nvidia-examples beside the checkout (a worktree one
level deeper also finds it). ROOT is None when none is present; such tests skip."""
import os

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CANDIDATES = [os.environ.get("OPENCUTE_NVIDIA_EXAMPLES", ""), os.path.join(_REPO, "..", "shared", "nvidia-examples"),
              os.path.join(_REPO, "..", "..", "shared", "nvidia-examples")]
ROOT = next((os.path.normpath(c) for c in CANDIDATES if c and os.path.isdir(c)), None)


def path(*parts):
    """The example file or folder at `parts` under ROOT ("" -style missing path when absent)."""
    return os.path.join(ROOT, *parts) if ROOT else os.path.join("/nonexistent-nvidia-examples", *parts)
