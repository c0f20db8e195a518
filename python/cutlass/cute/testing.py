"""`cute.testing` (also `cutlass.testing`): timing and tuning helpers for examples and benchmarks.

`benchmark` times with CUDA events on the stream the work runs on; on the CPU emulator (no GPU)
it measures wall-clock time instead, which is all there is to measure there.
"""
import inspect
import itertools
import time

from .. import _core, cuda as _cuda
from .._dsl.jit import JitFunction
from .._dsl.options import CompileOptions

try:  # the device assertion lives with the other DSL operations when present
    from .._dsl.assertions import assert_  # noqa: F401
except ImportError:
    pass

from .testing_convert import convert  # noqa: E402,F401

_L2_CACHE_SIZE_ATTRIBUTE = 38  # CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE


def add_tensor_init_args(parser, supports_int_dtypes=False):
    """The examples' tensor-initialisation options: --init_normal (normal instead of uniform random
    values; integer tensors keep the uniform ones), --normal_mean and --normal_std."""
    note = "" if not supports_int_dtypes else " (integer dtypes keep uniform random values)"
    parser.add_argument("--init_normal", action="store_true", default=False,
                        help="Initialize the tensors from a normal distribution" + note)
    parser.add_argument("--normal_mean", type=float, default=0.0, help="Mean of the normal initialization")
    parser.add_argument("--normal_std", type=float, default=1.0, help="Standard deviation of the normal initialization")
    return parser


def validate_tensor_init_args(args, parser):
    """Rejects (parser.error) a normal initialization whose standard deviation is not positive."""
    if getattr(args, "init_normal", False) and not args.normal_std > 0:
        parser.error(f"--normal_std must be positive, got {args.normal_std}")


class CantImplementError(Exception):
    """A kernel cannot implement the requested configuration (its can_implement checks raise it and
    NVIDIA's examples catch it to report the configuration as unsupported)."""


class JitArguments:
    """The positional and keyword arguments of one call of the benchmarked callable."""

    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs
        self._scope = []

    def add_to_scope(self, refs):
        """Keeps `refs` (e.g. the torch tensors behind the arguments) alive as long as this."""
        self._scope.extend(refs if isinstance(refs, (list, tuple)) else [refs])

    def __repr__(self):
        return f"JitArguments(args={self.args!r}, kwargs={self.kwargs!r})"


def _stream_handle(stream):
    if stream is None:
        return 0
    if hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
        return int(stream.cuda_stream)
    # cuda.bindings' CUstream converts to its handle with int() (its getPtr() is the address
    # of the Python object's storage, not the stream).
    return int(stream)


def _workspaces(kernel_arguments, workspace_generator, workspace_count):
    if workspace_generator is not None and kernel_arguments is not None:
        raise ValueError("benchmark takes kernel_arguments or workspace_generator, not both")
    if workspace_generator is None:
        args = kernel_arguments if kernel_arguments is not None else JitArguments()
        if not isinstance(args, JitArguments):
            raise TypeError(f"kernel_arguments must be a JitArguments, got {type(args).__name__}")
        return [args]
    if workspace_count < 1:
        raise ValueError(f"workspace_count must be at least 1, got {workspace_count}")
    spaces = [workspace_generator() for _ in range(workspace_count)]
    for w in spaces:
        if not isinstance(w, JitArguments):
            raise TypeError(f"workspace_generator must return JitArguments, got {type(w).__name__}")
    return spaces


def benchmark(callable, *, warmup_iterations=10, iterations=100, stream=None, kernel_arguments=None,  # noqa: A002
              workspace_generator=None, workspace_count=1, use_cuda_graphs=False, use_cupti=False, nvtx_tag=None):
    """Average time of one call of `callable` in microseconds, over `iterations` calls after
    `warmup_iterations` untimed ones. Calls cycle through the workspaces (`workspace_count`
    argument sets from `workspace_generator`, to run with a cold L2) or use `kernel_arguments`."""
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1, got {iterations}")
    if warmup_iterations < 0:
        raise ValueError(f"warmup_iterations must not be negative, got {warmup_iterations}")
    if use_cupti:
        raise NotImplementedError("benchmark(use_cupti=True) is not supported; CUDA events are used")
    if use_cuda_graphs and (stream is None or _stream_handle(stream) == 0):
        raise ValueError("benchmark(use_cuda_graphs=True) needs a non-default stream")
    spaces = _workspaces(kernel_arguments, workspace_generator, workspace_count)

    def run(i):
        w = spaces[i % len(spaces)]
        callable(*w.args, **w.kwargs)

    if _cuda._emulating():
        for i in range(warmup_iterations):
            run(i)
        start = time.perf_counter()
        for i in range(iterations):
            run(warmup_iterations + i)
        return (time.perf_counter() - start) * 1e6 / iterations

    _cuda.initialize_cuda_context()
    rt = _core.runtime
    handle = _stream_handle(stream)
    begin, end = rt.event_create(), rt.event_create()
    try:
        for i in range(warmup_iterations):
            run(i)
        if use_cuda_graphs:
            return _time_graph(rt, handle, begin, end, lambda: [run(warmup_iterations + i) for i in range(iterations)],
                               iterations)
        rt.event_record(begin, handle)
        for i in range(iterations):
            run(warmup_iterations + i)
        rt.event_record(end, handle)
        rt.event_synchronize(end)
        return rt.event_elapsed_ms(begin, end) * 1e3 / iterations
    finally:
        rt.event_destroy(begin)
        rt.event_destroy(end)


def _time_graph(rt, stream, begin, end, issue_calls, iterations):
    """Records the calls into one CUDA graph on `stream`, replays it once to warm up, then times
    one replay: the launches' CPU cost is left out."""
    rt.stream_begin_capture(stream)
    try:
        issue_calls()
    finally:
        graph = rt.stream_end_capture(stream)  # ends the capture even when a call failed
    try:
        graph_exec = rt.graph_instantiate(graph)
        try:
            rt.graph_launch(graph_exec, stream)
            rt.event_record(begin, stream)
            rt.graph_launch(graph_exec, stream)
            rt.event_record(end, stream)
            rt.event_synchronize(end)
            return rt.event_elapsed_ms(begin, end) * 1e3 / iterations
        finally:
            rt.graph_exec_destroy(graph_exec)
    finally:
        rt.graph_destroy(graph)


def get_workspace_count(one_workspace_bytes, warmup_iterations, iterations):
    """How many argument sets make every call miss the L2 cache: enough to span three times
    its size, but no more than there are calls. Without a GPU there is no L2: one."""
    if one_workspace_bytes <= 0:
        raise ValueError(f"one_workspace_bytes must be positive, got {one_workspace_bytes}")
    if _cuda._emulating():
        return 1
    l2_bytes = _core.device_attribute(_L2_CACHE_SIZE_ATTRIBUTE, 0)
    return min(warmup_iterations + iterations, 3 * l2_bytes // one_workspace_bytes + 1)


def _configurations(params_dict):
    names = list(params_dict or {})
    for values in itertools.product(*(params_dict[n] for n in names)):
        yield dict(zip(names, values))


def tune(func, params_dict=None, kernel_arguments=JitArguments(), warmup_iterations=10, iterations=100,
         stream=None):
    """Grid search: for each combination in `params_dict`, `func(*args, **kwargs, **params)`
    returns a callable that is benchmarked; returns the fastest combination. Combinations for
    which `func` raises are skipped."""
    best, best_time, failures = None, None, []
    for params in _configurations(params_dict):
        try:
            runner = func(*kernel_arguments.args, **kernel_arguments.kwargs, **params)
        except Exception as e:  # noqa: BLE001 - an unusable configuration is skipped, and reported if none works
            failures.append(f"{params}: {type(e).__name__}: {e}")
            continue
        t = benchmark(runner, warmup_iterations=warmup_iterations, iterations=iterations, stream=stream)
        if best_time is None or t < best_time:
            best, best_time = params, t
    if best is None:
        raise RuntimeError("tune: no configuration could be run:\n  " + "\n  ".join(failures))
    return best


def autotune_jit(params_dict=None, update_on_change=None, warmup_iterations=10, iterations=100):
    """Decorates a @cute.jit function: on the first call, and whenever an argument named in
    `update_on_change` changes, every combination of the Constexpr parameters in `params_dict`
    is compiled and timed, and the fastest is used from then on. `cute.compile` of the decorated
    function compiles the @cute.jit function with the parameters it is given (as `testing.tune`
    callers do), those not given taking the function's defaults."""
    def decorate(jit_fn):
        if not isinstance(jit_fn, JitFunction):
            raise TypeError("autotune_jit decorates a @cute.jit function (put it above @cute.jit)")
        sig = inspect.signature(jit_fn._fn)
        for name in update_on_change or ():
            if name not in sig.parameters:
                raise ValueError(f"autotune_jit: update_on_change names {name!r}, which is not a parameter of "
                                 f"{jit_fn._fn.__name__}")
        best_by_key = {}

        def tuned(*args, **kwargs):
            bound = sig.bind_partial(*args, **kwargs)
            key = tuple(bound.arguments.get(n) for n in update_on_change or ())
            best = best_by_key.get(key)
            if best is None:
                best_time, failures = None, []
                for params in _configurations(params_dict):
                    try:
                        compiled, values = jit_fn._trace_and_compile(args, {**kwargs, **params}, CompileOptions(),
                                                                     use_cache=True)
                    except Exception as e:  # noqa: BLE001 - skipped, reported if none works
                        failures.append(f"{params}: {type(e).__name__}: {e}")
                        continue
                    t = benchmark(lambda: compiled(*values), warmup_iterations=warmup_iterations,
                                  iterations=iterations)
                    if best_time is None or t < best_time:
                        best, best_time = params, t
                if best is None:
                    raise RuntimeError("autotune_jit: no configuration could be compiled:\n  " + "\n  ".join(failures))
                best_by_key[key] = best
            return jit_fn(*args, **kwargs, **best)

        tuned.__wrapped__ = jit_fn
        # cute.compile(tuned, ..., **params) compiles the @cute.jit function with explicit params
        tuned.__cute_jit_function__ = jit_fn
        tuned.__name__ = jit_fn._fn.__name__
        tuned.__qualname__ = getattr(jit_fn._fn, "__qualname__", tuned.__name__)
        tuned.__doc__ = jit_fn._fn.__doc__
        return tuned

    return decorate
