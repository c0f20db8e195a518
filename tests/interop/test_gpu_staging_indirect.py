"""Device memory an emulated kernel reaches only through memory, and emulated launches captured
into CUDA graphs (runtime/host_staging.h). A kernel given a table of addresses (grouped GEMM's
per-group A/B/C pointers) loads each address and writes through it: on a GPU machine the table
holds device addresses, whose allocations are staged through host memory on first access and
copied back; an address that is no memory at all stops the launch at the kernel's line. A call
on a stream that torch is capturing into a CUDA graph is recorded (copies in, the emulated launch
as a host function, copies out) and runs at each replay. The GPU tests are marked `gpu` (the lead
runs `pytest -m gpu tests/interop/test_gpu_staging_indirect.py` on the H100); the rest run anywhere."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute

OPTIONS = "--target cpu --gpu-arch sm_100a"
GROUP = 64  # elements each table entry points to


@cute.kernel
def scale_through_table_kernel(table: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    group, _, _ = cute.arch.block_idx()
    address = table[group]
    data = cute.make_tensor(cute.make_ptr(cutlass.Float32, address, cute.AddressSpace.gmem, assumed_align=16),
                            cute.make_layout(GROUP))
    data[tidx] = data[tidx] * 2.0 + cutlass.Float32(group)  # STORE_THROUGH_TABLE


@cute.jit
def scale_through_table(table: cute.Tensor, also_an_argument: cute.Tensor):
    # `also_an_argument` is staged as an argument; the table points into it too: one host copy.
    scale_through_table_kernel(table).launch(grid=(cute.size(table), 1, 1), block=(GROUP, 1, 1))


def _store_line():
    with open(__file__) as source:
        return next(n for n, line in enumerate(source, 1) if line.rstrip().endswith("# STORE_THROUGH_TABLE"))


def test_a_table_of_host_addresses_is_written_through():
    groups = [np.arange(GROUP, dtype=np.float32) + 100 * g for g in range(3)]
    table = np.array([g.ctypes.data for g in groups], dtype=np.int64)
    want = [g * 2 + k for k, g in enumerate(groups)]
    compiled = cute.compile(scale_through_table, table, groups[2], options=OPTIONS)
    compiled(table, groups[2])
    for got, w in zip(groups, want):
        np.testing.assert_array_equal(got, w)


def test_an_address_that_is_no_memory_stops_the_launch_at_the_kernel_line():
    # Where the emulator would crash the process dereferencing it, the launch fails instead.
    good = np.zeros(GROUP, dtype=np.float32)
    table = np.array([good.ctypes.data, 0x10000], dtype=np.int64)
    compiled = cute.compile(scale_through_table, table, good, options=OPTIONS + " --generate-line-info")
    with pytest.raises(cutlass.DSLRuntimeError) as raised:
        compiled(table, good)
    message = str(raised.value)
    assert "neither host memory nor device memory staged for the emulated launch" in message
    assert "scale_through_table_kernel" in message and f"(line {_store_line()})" in message
    assert "block (1,0,0)" in message


@pytest.mark.gpu
def test_a_table_of_device_addresses_is_staged_on_first_access_and_written_back():
    torch = pytest.importorskip("torch")
    groups = [torch.randn(GROUP, device="cuda") for _ in range(3)]
    separate = torch.randn(1 << 20, device="cuda")  # its own allocation, reached only through the table
    groups.append(separate[1024:1024 + GROUP])
    table = torch.tensor([g.data_ptr() for g in groups], dtype=torch.int64, device="cuda")
    want = [g * 2 + k for k, g in enumerate(groups)]
    untouched = separate[:1024].clone()
    compiled = cute.compile(scale_through_table, table, groups[2], options=OPTIONS)
    assert compiled.target == "cpu"
    compiled(table, groups[2])
    for got, w in zip(groups, want):
        torch.testing.assert_close(got, w)
    torch.testing.assert_close(separate[:1024], untouched)  # bytes the launch did not write


@cute.kernel
def axpy_kernel(x: cute.Tensor, y: cute.Tensor):
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    i = bidx * 128 + tidx
    y[i] = x[i] * 2.0 + y[i]


@cute.jit
def axpy_on(x: cute.Tensor, y: cute.Tensor, stream):
    axpy_kernel(x, y).launch(grid=(cute.size(x) // 128, 1, 1), block=(128, 1, 1), stream=stream)


@pytest.mark.gpu
def test_an_emulated_launch_captured_into_a_cuda_graph_runs_at_each_replay():
    torch = pytest.importorskip("torch")
    x = torch.randn(1024, device="cuda")
    y = torch.zeros(1024, device="cuda")
    side = torch.cuda.Stream()
    compiled = cute.compile(axpy_on, x, y, side, options=OPTIONS)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        compiled(x, y, cutlass.cuda.make_stream(side.cuda_stream))
    torch.cuda.synchronize()
    assert torch.count_nonzero(y) == 0  # recorded, not run
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, x * 2)
    # A replay reads what the device holds when it runs.
    first = y.clone()
    x.fill_(1.0)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, first + 2)
    del graph  # the recorded launch's host buffers go with the graph
    torch.cuda.synchronize()
    compiled(x, y, cutlass.cuda.make_stream(side.cuda_stream))  # an ordinary call after the graph
    side.synchronize()
    torch.testing.assert_close(y, first + 4)


@cute.jit
def scale_through_table_on(table: cute.Tensor, also_an_argument: cute.Tensor, stream):
    scale_through_table_kernel(table).launch(grid=(cute.size(table), 1, 1), block=(GROUP, 1, 1), stream=stream)


@pytest.mark.gpu
def test_a_captured_launch_reaching_device_memory_only_through_memory_fails_at_the_next_call():
    # A host function may not call CUDA, so a replay cannot stage what no argument reaches: the
    # replay's error is printed, and raised by the next call (the graph itself cannot raise).
    torch = pytest.importorskip("torch")
    reached_only_through_the_table = torch.randn(1 << 20, device="cuda")
    argument = torch.randn(GROUP, device="cuda")
    table = torch.tensor([argument.data_ptr(), reached_only_through_the_table.data_ptr()], dtype=torch.int64,
                         device="cuda")
    side = torch.cuda.Stream()
    stream = cutlass.cuda.make_stream(side.cuda_stream)
    compiled = cute.compile(scale_through_table_on, table, argument, side, options=OPTIONS)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        compiled(table, argument, stream)
    graph.replay()
    torch.cuda.synchronize()
    with pytest.raises(cutlass.DSLRuntimeError, match="an emulated launch replayed from a CUDA graph failed") as raised:
        compiled(table, argument, stream)
    assert "a launch captured into a CUDA graph stages only the memory its arguments reach" in str(raised.value)
    # The error was reported once: the next call runs (outside a capture, the table's memory is staged).
    before = reached_only_through_the_table[:GROUP].clone()
    compiled(table, argument, stream)
    side.synchronize()
    torch.testing.assert_close(reached_only_through_the_table[:GROUP], before * 2 + 1)
