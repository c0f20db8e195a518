"""Device intrinsics (`cute.arch`): thread and block indices, barriers."""
from .._dsl import context
from .._dsl.numeric import wrap

WARP_SIZE = 32
WARPS_PER_WARPGROUP = 4
THREADS_PER_WARPGROUP = 128


def _xyz(what):
    t = context.tracer()
    return tuple(wrap(t.special(what, d)) for d in range(3))


def thread_idx(*, loc=None, ip=None):
    return _xyz("thread_idx")


def block_idx(*, loc=None, ip=None):
    return _xyz("block_idx")


def block_dim(*, loc=None, ip=None):
    return _xyz("block_dim")


def grid_dim(*, loc=None, ip=None):
    return _xyz("grid_dim")


def lane_idx(*, loc=None, ip=None):
    return wrap(context.tracer().special("lane_idx", 0))


def warp_idx(*, loc=None, ip=None):
    return wrap(context.tracer().special("warp_idx", 0))


def make_warp_uniform(value, *, loc=None, ip=None):
    return value


def sync_threads(*, loc=None, ip=None):
    context.tracer().barrier()


barrier = sync_threads
