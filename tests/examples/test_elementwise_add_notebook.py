"""The kernels of NVIDIA's `elementwise_add` notebook (examples/python/CuTeDSL/notebooks,
BSD-3), run with the same calls on the CPU emulator with numpy arrays at small shapes that keep
each variant's divisibility assumptions; results are checked against numpy.

The stored notebook keeps no cell outputs, so the trace-time prints are checked against
independent references instead: the layouts the notebook's own text gives (`((1,8),(2048,256)):
((0,1),(2048,8))` for the (1,8)-tiled 2048x2048 tensor, `((1,8)):((0,1))` for its slice,
`((32,4),(8,4)):((8,2048),(1,512))` for the visualised composition), the documented print formats
(`tensor<ptr<...> o layout>`, `!cute.memref<...>`, `!cute.coord_tensor<...>`) and layouts derived
by hand in the comments. numpy arrays are host memory, so pointers print as `generic`; on a GPU
with torch they print as `gmem` (test_notebook_kernels_on_the_gpu).
"""
import re
from functools import partial  # noqa: F401 - imported by the notebook's first cell
from operator import mul
from typing import List

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack


@pytest.fixture(autouse=True)
def _emulator_for_numpy(request, monkeypatch):
    """numpy arrays live in host memory: kernels over them run on the emulator, GPU or not."""
    if request.node.get_closest_marker("gpu") is None:
        monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")


# ---- the notebook's kernels and host functions, transcribed ------------------------------------

@cute.kernel
def naive_elementwise_add_kernel(
    gA: cute.Tensor,  # Input tensor A
    gB: cute.Tensor,  # Input tensor B
    gC: cute.Tensor,  # Output tensor C = A + B
):
    tidx, _, _ = cute.arch.thread_idx()  # Thread index within block (0 to bdim-1)
    bidx, _, _ = cute.arch.block_idx()  # Block index in grid (0 to grid_dim-1)
    bdim, _, _ = cute.arch.block_dim()  # Number of threads per block

    thread_idx = bidx * bdim + tidx  # Global thread ID

    m, n = gA.shape  # Get tensor dimensions (M rows × N columns)

    ni = thread_idx % n  # Column index (faster varying dimension)
    mi = thread_idx // n  # Row index (slower varying dimension)

    a_val = gA[mi, ni]  # Load element from tensor A
    b_val = gB[mi, ni]  # Load element from tensor B

    gC[mi, ni] = a_val + b_val


@cute.jit  # Just-in-time compilation decorator
def naive_elementwise_add(
    mA: cute.Tensor,  # Input tensor A
    mB: cute.Tensor,  # Input tensor B
    mC: cute.Tensor,  # Output tensor C
):
    num_threads_per_block = 256

    m, n = mA.shape  # Matrix dimensions (M rows × N columns)

    kernel = naive_elementwise_add_kernel(mA, mB, mC)

    kernel.launch(
        grid=((m * n) // num_threads_per_block, 1, 1),  # Number of blocks in x,y,z
        block=(num_threads_per_block, 1, 1),  # Threads per block in x,y,z
    )


@cute.kernel
def vectorized_elementwise_add_kernel(
    gA: cute.Tensor,
    gB: cute.Tensor,
    gC: cute.Tensor,
):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()

    thread_idx = bidx * bdim + tidx

    # Map thread index to logical index of input tensor in unit of vector
    m, n = gA.shape[1]  # thread-domain
    ni = thread_idx % n
    mi = thread_idx // n

    # Map logical index to physical address via tensor layout
    a_val = gA[(None, (mi, ni))].load()
    b_val = gB[(None, (mi, ni))].load()
    print(f"[DSL INFO] sliced gA = {gA[(None, (mi, ni))]}")
    print(f"[DSL INFO] sliced gB = {gB[(None, (mi, ni))]}")

    # Perform element-wise addition
    gC[(None, (mi, ni))] = a_val + b_val


@cute.jit
def vectorized_elementwise_add(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    threads_per_block = 256

    gA = cute.zipped_divide(mA, (1, 8))
    gB = cute.zipped_divide(mB, (1, 8))
    gC = cute.zipped_divide(mC, (1, 8))

    print("[DSL INFO] Tiled Tensors:")
    print(f"[DSL INFO]   gA = {gA}")
    print(f"[DSL INFO]   gB = {gB}")
    print(f"[DSL INFO]   gC = {gC}")

    vectorized_elementwise_add_kernel(gA, gB, gC).launch(
        grid=(cute.size(gC, mode=[1]) // threads_per_block, 1, 1),
        block=(threads_per_block, 1, 1),
    )


@cute.kernel
def elementwise_add_kernel(
    gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, tv_layout: cute.Layout
):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()

    blk_coord = ((None, None), bidx)

    blkA = gA[blk_coord]  # (TileM, TileN) -> physical address
    blkB = gB[blk_coord]  # (TileM, TileN) -> physical address
    blkC = gC[blk_coord]  # (TileM, TileN) -> physical address

    tidfrgA = cute.composition(blkA, tv_layout)
    tidfrgB = cute.composition(blkB, tv_layout)
    tidfrgC = cute.composition(blkC, tv_layout)

    print("Composed with TV layout:")
    print(f"  tidfrgA: {tidfrgA.type}")

    thr_coord = (tidx, None)

    thrA = tidfrgA[thr_coord]  # (V) -> physical address
    thrB = tidfrgB[thr_coord]  # (V) -> physical address
    thrC = tidfrgC[thr_coord]  # (V) -> physical address

    thrC[None] = thrA.load() + thrB.load()


@cute.jit
def elementwise_add(
    mA: cute.Tensor,
    mB: cute.Tensor,
    mC: cute.Tensor,
):
    coalesced_ldst_bytes = 16

    assert all(t.element_type == mA.element_type for t in [mA, mB, mC])
    dtype = mA.element_type

    thr_layout = cute.make_ordered_layout((4, 64), order=(1, 0))
    val_layout = cute.make_ordered_layout((16, coalesced_ldst_bytes), order=(1, 0))
    val_layout = cute.recast_layout(dtype.width, 8, val_layout)
    tiler_mn, tv_layout = cute.make_layout_tv(thr_layout, val_layout)

    print(f"[DSL INFO] Tiler: {tiler_mn}")
    print(f"[DSL INFO] TV Layout: {tv_layout}")

    gA = cute.zipped_divide(mA, tiler_mn)  # ((TileM, TileN), (RestM, RestN))
    gB = cute.zipped_divide(mB, tiler_mn)  # ((TileM, TileN), (RestM, RestN))
    gC = cute.zipped_divide(mC, tiler_mn)  # ((TileM, TileN), (RestM, RestN))

    print("Tiled Input Tensors:")
    print("[DSL INFO] Tiled Tensors:")
    print(f"[DSL INFO]   gA = {gA.type}")
    print(f"[DSL INFO]   gB = {gB.type}")
    print(f"[DSL INFO]   gC = {gC.type}")

    elementwise_add_kernel(gA, gB, gC, tv_layout).launch(
        grid=[cute.size(gC, mode=[1]), 1, 1],
        block=[cute.size(tv_layout, mode=[0]), 1, 1],
    )


# The notebook redefines `elementwise_add` with the thread-block remapping; here it keeps its own
# name so that both versions can be tested.
@cute.jit
def elementwise_add_remapped(
    mA: cute.Tensor,
    mB: cute.Tensor,
    mC: cute.Tensor,
):
    coalesced_ldst_bytes = 16

    assert all(t.element_type == mA.element_type for t in [mA, mB, mC])
    dtype = mA.element_type

    thr_layout = cute.make_ordered_layout((4, 64), order=(1, 0))
    val_layout = cute.make_ordered_layout((16, coalesced_ldst_bytes), order=(1, 0))
    val_layout = cute.recast_layout(dtype.width, 8, val_layout)
    tiler_mn, tv_layout = cute.make_layout_tv(thr_layout, val_layout)

    print(f"[DSL INFO] Tiler: {tiler_mn}")
    print(f"[DSL INFO] TV Layout: {tv_layout}")

    gA = cute.zipped_divide(mA, tiler_mn)  # ((TileM, TileN), (RestM, RestN))
    gB = cute.zipped_divide(mB, tiler_mn)  # ((TileM, TileN), (RestM, RestN))
    gC = cute.zipped_divide(mC, tiler_mn)  # ((TileM, TileN), (RestM, RestN))

    # (RestM, RestN) -> (RestN, RestM)
    remap_block = cute.make_ordered_layout(
        cute.select(gA.shape[1], mode=[1, 0]), order=(1, 0)
    )
    gA = cute.composition(gA, (None, remap_block))
    gB = cute.composition(gB, (None, remap_block))
    gC = cute.composition(gC, (None, remap_block))

    print("Tiled Input Tensors:")
    print("[DSL INFO] Tiled Tensors:")
    print(f"[DSL INFO]   gA = {gA.type}")
    print(f"[DSL INFO]   gB = {gB.type}")
    print(f"[DSL INFO]   gC = {gC.type}")

    elementwise_add_kernel(gA, gB, gC, tv_layout).launch(
        grid=[cute.size(gC, mode=[1]), 1, 1],
        block=[cute.size(tv_layout, mode=[0]), 1, 1],
    )


@cute.kernel
def elementwise_apply_kernel(
    op: cutlass.Constexpr,
    mInputs: List[cute.Tensor],
    mC: cute.Tensor,
    cC: cute.Tensor,  # coordinate tensor
    shape: cute.Shape,
    tv_layout: cute.Layout,  # (tid, vid) -> logic coord
):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()

    blk_crd = ((None, None), bidx)

    gInputs = [t[blk_crd] for t in mInputs]  # (TileM, TileN)
    gC = mC[blk_crd]  # (TileM, TileN)
    gCrd = cC[blk_crd]  # (TileM, TileN)

    print("[DSL INFO] Sliced Tensors per thread block:")
    for i in cutlass.range_constexpr(len(gInputs)):
        print(f"[DSL INFO]   ctaInputs{i} = {gInputs[i].type}")
    print(f"[DSL INFO]   gC = {gC.type}")
    print(f"[DSL INFO]   gCrd = {gCrd.type}")

    tidfrgInputs = [cute.composition(t, tv_layout) for t in gInputs]
    tidfrgC = cute.composition(gC, tv_layout)
    tidfrgCrd = cute.composition(gCrd, tv_layout)

    # repeat None like vid to remove hierarchy of layout
    thr_crd = (tidx, cute.repeat_like(None, tidfrgInputs[0][1]))

    thrInputs = [t[thr_crd] for t in tidfrgInputs]  # (V)
    thrC = tidfrgC[thr_crd]  # (V)
    thrCrd = tidfrgCrd[thr_crd]

    print("[DSL INFO] Sliced Tensors per thread:")
    for i in cutlass.range_constexpr(len(thrInputs)):
        print(f"[DSL INFO]   thrInputs{i} = {thrInputs[i].type}")
    print(f"[DSL INFO]   thrC = {thrC.type}")
    print(f"[DSL INFO]   thrCrd = {thrCrd.type}")

    frgPred = cute.make_fragment(thrCrd.shape, cutlass.Boolean)
    print(f"[DSL INFO]   frgPred = {frgPred.type}")

    for i in cutlass.range_constexpr(cute.size(frgPred)):
        frgPred[i] = cute.elem_less(thrCrd[i], shape)

    result = op(*[thrInput.load() for thrInput in thrInputs])
    thrC.store(result)


@cute.jit
def elementwise_apply(op: cutlass.Constexpr, inputs, result: cute.Tensor):
    coalesced_ldst_bytes = 16

    assert all(t.element_type == inputs[0].element_type for t in inputs)
    dtype = inputs[0].element_type

    thr_layout = cute.make_ordered_layout((4, 64), order=(1, 0))
    val_layout = cute.make_ordered_layout((16, coalesced_ldst_bytes), order=(1, 0))
    val_layout = cute.recast_layout(dtype.width, 8, val_layout)
    tiler_mn, tv_layout = cute.make_layout_tv(thr_layout, val_layout)

    mInputs = [cute.zipped_divide(input, tiler_mn) for input in inputs]
    mC = cute.zipped_divide(result, tiler_mn)  # ((TileM, TileN), (RestM, RestN))

    # (RestM, RestN) -> (RestN, RestM)
    remap_block = cute.make_ordered_layout(
        cute.select(mInputs[0].shape[1], mode=[1, 0]), order=(1, 0)
    )
    for i, t in enumerate(mInputs):
        mInputs[i] = cute.composition(t, (None, remap_block))

    mC = cute.composition(mC, (None, remap_block))

    idC = cute.make_identity_tensor(result.shape)
    cC = cute.zipped_divide(idC, tiler=tiler_mn)

    elementwise_apply_kernel(op, mInputs, mC, cC, result.shape, tv_layout).launch(
        grid=[cute.size(mC, mode=[1]), 1, 1],
        block=[cute.size(tv_layout, mode=[0]), 1, 1],
    )


def mul_relu(a, b):
    tmp = a * b
    return cute.where(tmp > 0, tmp, cute.full_like(tmp, 0))


# ---- helpers ------------------------------------------------------------------------------------

def _inputs(m, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, n)).astype(dtype)
    b = rng.standard_normal((m, n)).astype(dtype)
    c = np.zeros((m, n), dtype)
    return a, b, c


def _cute(*arrays):
    return [from_dlpack(x, assumed_align=16) for x in arrays]


_NAMES = {np.float16: "f16", np.float32: "f32"}


def _lines(capfd):
    return capfd.readouterr().out.splitlines()


# ---- naive kernel -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_naive_elementwise_add(dtype):
    a, b, c = _inputs(16, 128, dtype)  # m * n is a multiple of 256 threads
    a_, b_, c_ = _cute(a, b, c)
    naive_elementwise_add_ = cute.compile(naive_elementwise_add, a_, b_, c_)
    naive_elementwise_add_(a_, b_, c_)
    np.testing.assert_array_equal(c, a + b)


def test_benchmark_helper_prints_the_notebook_metrics(capfd):
    a, b, c = _inputs(16, 128, np.float16)
    num_elements = sum([a.size, b.size, c.size])
    a_, b_, c_ = _cute(a, b, c)
    compiled = cute.compile(naive_elementwise_add, a_, b_, c_)

    def benchmark(callable, a_, b_, c_):
        avg_time_us = cute.testing.benchmark(
            callable,
            kernel_arguments=cute.testing.JitArguments(a_, b_, c_),
            warmup_iterations=5,
            iterations=100,
        )
        dtype = a_.element_type
        bytes_per_element = dtype.width // 8
        total_bytes = num_elements * bytes_per_element
        achieved_bandwidth = total_bytes / (avg_time_us * 1000)  # GB/s
        print(f"Performance Metrics:")
        print(f"-------------------")
        print(f"Kernel execution time: {avg_time_us:.4f} us")
        print(f"Memory throughput: {achieved_bandwidth:.2f} GB/s")

    capfd.readouterr()
    benchmark(compiled, a_, b_, c_)
    out = _lines(capfd)
    assert out[:2] == ["Performance Metrics:", "-------------------"]
    assert re.fullmatch(r"Kernel execution time: \d+\.\d{4} us", out[2])
    assert re.fullmatch(r"Memory throughput: \d+\.\d{2} GB/s", out[3])
    np.testing.assert_array_equal(c, a + b)  # the benchmark's launches computed the sum too


# ---- vectorized kernel --------------------------------------------------------------------------

def test_vectorized_elementwise_add_prints_the_notebook_layouts(capfd):
    # The notebook's text: a (2048,2048):(2048,1) tensor tiled by (1,8) is
    # ((1,8),(2048,256)):((0,1),(2048,8)), and slicing (None, (mi, ni)) leaves ((1,8)):((0,1)).
    # The 16-byte alignment survives the slice: its offset mi*2048 + ni*8 is a multiple of 8 halves.
    a, b, c = _inputs(2048, 2048, np.float16)
    a_, b_, c_ = _cute(a, b, c)
    capfd.readouterr()
    cute.compile(vectorized_elementwise_add, a_, b_, c_)
    tiled = "tensor<ptr<f16, generic, align<16>> o ((1,8),(2048,256)):((0,1),(2048,8))>"
    sliced = "tensor<ptr<f16, generic, align<16>> o ((1,8)):((0,1))>"
    assert _lines(capfd) == [
        "[DSL INFO] Tiled Tensors:",
        f"[DSL INFO]   gA = {tiled}",
        f"[DSL INFO]   gB = {tiled}",
        f"[DSL INFO]   gC = {tiled}",
        f"[DSL INFO] sliced gA = {sliced}",
        f"[DSL INFO] sliced gB = {sliced}",
    ]


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_vectorized_elementwise_add(dtype):
    a, b, c = _inputs(16, 256, dtype)  # n % 8 == 0 and (m * n / 8) % 256 == 0
    a_, b_, c_ = _cute(a, b, c)
    compiled_func = cute.compile(vectorized_elementwise_add, a_, b_, c_)
    compiled_func(a_, b_, c_)
    np.testing.assert_array_equal(c, a + b)


# ---- TV-layout kernels --------------------------------------------------------------------------
# make_layout_tv((4,64):(64,1), val) with val = (16, 16 bytes) recast to elements: (16,8):(8,1) for
# f16, (16,4):(4,1) for f32. Thread t = 64*tm + tn and value v = V*vm + vn (V = 8 or 4) own tile
# element (m, n) = (16*tm + vm, V*tn + vn); as a column-major index of the (64, 64*V) tile that is
# vm + 16*tm + 64*vn + 64*V*tn, which gives the TV layouts below.
_TV = {
    np.float16: ("(64, 512)", "((64,4),(8,16)):((512,16),(64,1))"),
    np.float32: ("(64, 256)", "((64,4),(4,16)):((256,16),(64,1))"),
}


@pytest.mark.parametrize("dtype, shape, tiled, tidfrg", [
    # (128,1024) in (64,512) tiles: rest (2,2) with strides (64*1024, 512); a thread's values step
    # 1 along n (vn) and 1024 along m (vm); threads step V=8 along n (tn) and 16 rows (tm).
    (np.float16, (128, 1024), "((64,512),(2,2)):((1024,1),(65536,512))", "((64,4),(8,16)):((8,16384),(1,1024))"),
    (np.float32, (128, 512), "((64,256),(2,2)):((512,1),(32768,256))", "((64,4),(4,16)):((4,8192),(1,512))"),
])
def test_elementwise_add_with_tv_layout(capfd, dtype, shape, tiled, tidfrg):
    a, b, c = _inputs(*shape, dtype)
    a_, b_, c_ = _cute(a, b, c)
    capfd.readouterr()
    elementwise_add_ = cute.compile(elementwise_add, a_, b_, c_)
    t = _NAMES[dtype]
    memref = f'!cute.memref<{t}, generic, align<16>, "{tiled}">'
    assert _lines(capfd) == [
        f"[DSL INFO] Tiler: {_TV[dtype][0]}",
        f"[DSL INFO] TV Layout: {_TV[dtype][1]}",
        "Tiled Input Tensors:",
        "[DSL INFO] Tiled Tensors:",
        f"[DSL INFO]   gA = {memref}",
        f"[DSL INFO]   gB = {memref}",
        f"[DSL INFO]   gC = {memref}",
        "Composed with TV layout:",
        f'  tidfrgA: !cute.memref<{t}, generic, align<16>, "{tidfrg}">',
    ]
    elementwise_add_(a_, b_, c_)
    np.testing.assert_array_equal(c, a + b)


def test_elementwise_add_with_remapped_blocks(capfd):
    # (128,1536) in (64,512) tiles: rest (2,3):(98304,512). remap_block = (3,2):(2,1) makes block b
    # take tile column b % 3 and tile row b // 3: the rest mode becomes (3,2):(512,98304).
    a, b, c = _inputs(128, 1536, np.float16)
    a_, b_, c_ = _cute(a, b, c)
    capfd.readouterr()
    elementwise_add_ = cute.compile(elementwise_add_remapped, a_, b_, c_)
    memref = '!cute.memref<f16, generic, align<16>, "((64,512),(3,2)):((1536,1),(512,98304))">'
    assert _lines(capfd)[4:] == [
        f"[DSL INFO]   gA = {memref}",
        f"[DSL INFO]   gB = {memref}",
        f"[DSL INFO]   gC = {memref}",
        "Composed with TV layout:",
        '  tidfrgA: !cute.memref<f16, generic, align<16>, "((64,4),(8,16)):((8,24576),(1,1536))">',
    ]
    elementwise_add_(a_, b_, c_)
    np.testing.assert_array_equal(c, a + b)


def test_visualize_cell_composition(capfd):
    # The visualisation cell without cute_viz's display_tv_layout (not installed here); the
    # notebook's text gives the composed layout ((32,4),(8,4)):((8,2048),(1,512)).
    @cute.jit
    def visualize():
        tv_layout = cute.make_layout(((32, 4), (8, 4)), stride=((128, 4), (16, 1)))

        thr_block_layout = cute.make_layout((16, 256), stride=(512, 1))
        print(cute.composition(thr_block_layout, tv_layout))

    visualize()
    assert _lines(capfd) == ["((32,4),(8,4)):((8,2048),(1,512))"]


# ---- elementwise_apply with a Python operator and a custom function ------------------------------

def _apply_prints(t, tile, row, div_v):
    """What elementwise_apply_kernel prints for two row-major inputs with `row` elements per row:
    a (64, tile) block, and per thread V = tile/64 contiguous values in 16 rows (the coordinate
    tensors start at multiples of the tile for blocks, of (16, V) for threads)."""
    cta = f'!cute.memref<{t}, generic, align<16>, "(64,{tile}):({row},1)">'
    v = tile // 64
    thr = f'!cute.memref<{t}, generic, align<16>, "(({v},16)):((1,{row}))">'
    return [
        "[DSL INFO] Sliced Tensors per thread block:",
        f"[DSL INFO]   ctaInputs0 = {cta}",
        f"[DSL INFO]   ctaInputs1 = {cta}",
        f"[DSL INFO]   gC = {cta}",
        f'[DSL INFO]   gCrd = !cute.coord_tensor<"(?{{div=64}},?{{div={tile}}})", "(64,{tile}):(1@0,1@1)">',
        "[DSL INFO] Sliced Tensors per thread:",
        f"[DSL INFO]   thrInputs0 = {thr}",
        f"[DSL INFO]   thrInputs1 = {thr}",
        f"[DSL INFO]   thrC = {thr}",
        f'[DSL INFO]   thrCrd = !cute.coord_tensor<"(?{{div=16}},?{{div={div_v}}})", "(({v},16)):((1@1,1@0))">',
        f'[DSL INFO]   frgPred = !cute.memref<i8, rmem, align<32>, "(({v},16)):((1,{v}))">',
    ]


@pytest.mark.parametrize("dtype, shape, tile", [(np.float16, (128, 1536), 512), (np.float32, (128, 512), 256)])
def test_elementwise_apply_mul(capfd, dtype, shape, tile):
    a, b, c = _inputs(*shape, dtype)
    a_, b_, c_ = _cute(a, b, c)
    capfd.readouterr()
    elementwise_apply(mul, [a_, b_], c_)
    assert _lines(capfd) == _apply_prints(_NAMES[dtype], tile, shape[1], tile // 64)
    np.testing.assert_array_equal(c, mul(a, b))


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_elementwise_apply_custom_mul_relu(dtype):
    a, b, c = _inputs(128, 1024, dtype, seed=1)
    a_, b_, c_ = _cute(a, b, c)
    elementwise_apply(mul_relu, [a_, b_], c_)
    expected = np.maximum(a * b, dtype(0))
    assert (expected == 0).any() and (expected > 0).any()  # both branches of the where are taken
    np.testing.assert_array_equal(c, expected)


# ---- the same kernels on a GPU with torch (the notebook's own setting) ---------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["naive", "vectorized", "tv", "remapped", "mul", "mul_relu"])
def test_notebook_kernels_on_the_gpu(capfd, variant):
    torch = pytest.importorskip("torch")
    M, N = 256, 2048
    a = torch.randn(M, N, device="cuda", dtype=torch.float16)
    b = torch.randn(M, N, device="cuda", dtype=torch.float16)
    c = torch.zeros(M, N, device="cuda", dtype=torch.float16)
    a_, b_, c_ = (from_dlpack(x, assumed_align=16) for x in (a, b, c))
    capfd.readouterr()
    if variant in ("mul", "mul_relu"):
        elementwise_apply(mul if variant == "mul" else mul_relu, [a_, b_], c_)
        expected = a * b if variant == "mul" else torch.relu(a * b)
    else:
        fn = {"naive": naive_elementwise_add, "vectorized": vectorized_elementwise_add,
              "tv": elementwise_add, "remapped": elementwise_add_remapped}[variant]
        cute.compile(fn, a_, b_, c_)(a_, b_, c_)
        expected = a + b
    torch.cuda.synchronize()
    torch.testing.assert_close(c, expected)
    if variant == "vectorized":  # CUDA tensors are global memory
        assert ("[DSL INFO]   gA = tensor<ptr<f16, gmem, align<16>> o ((1,8),(256,256)):((0,1),(2048,8))>"
                in _lines(capfd))
