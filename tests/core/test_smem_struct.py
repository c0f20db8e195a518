"""Shared-memory storage: `cute.struct` layout rules (against ctypes' C layout and hand-computed
offsets), `cutlass.utils.SmemAllocator` in kernels on the emulator, the inferred launch size,
pointer-swizzled views, capacity limits and their errors."""
import ctypes
import warnings

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
from cutlass.cute.runtime import from_dlpack
from test_arch import TARGETS, Device
import toolchain


@cute.struct
class Pair:
    re: cutlass.Float32
    im: cutlass.Float32


@cute.struct
class Natural:
    values: cute.struct.MemRange[cutlass.Float32, 32]
    count: cutlass.Int64
    pair: Pair
    flag: cutlass.Int8
    half: cutlass.Float16


class CPair(ctypes.Structure):
    _fields_ = [("re", ctypes.c_float), ("im", ctypes.c_float)]


class CNatural(ctypes.Structure):
    _fields_ = [("values", ctypes.c_float * 32), ("count", ctypes.c_int64), ("pair", CPair),
                ("flag", ctypes.c_int8), ("half", ctypes.c_uint16)]


def test_natural_alignment_matches_c():
    assert Natural.size_in_bytes() == ctypes.sizeof(CNatural)
    assert Natural.__sizeof__() == ctypes.sizeof(CNatural)
    assert Natural.__alignof__() == ctypes.alignment(CNatural)
    for name, _ in CNatural._fields_:
        assert Natural.offset_of(name) == getattr(CNatural, name).offset, name
    assert Pair.size_in_bytes() == 8 and Pair.__alignof__() == 4


@cute.struct
class Strict:
    values: cute.struct.MemRange[cutlass.Float32, 32]      # 0..128
    count: cutlass.Int64                                    # 128
    pair: Pair                                              # 136
    wide: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, 32], 128]  # 256..384
    small: cute.struct.Align[cutlass.Int32, 8]             # 384
    pair16: cute.struct.Align[Pair, 16]                    # 400..408


def test_align_members_by_hand():
    offsets = {n: Strict.offset_of(n) for n in ("values", "count", "pair", "wide", "small", "pair16")}
    assert offsets == {"values": 0, "count": 128, "pair": 136, "wide": 256, "small": 384, "pair16": 400}
    assert Strict.__alignof__() == 128
    assert Strict.size_in_bytes() == 512  # 408 rounded up to the 128-byte alignment


@cute.union
class Overlay:
    word: cutlass.Int32
    bytes_: cute.struct.MemRange[cutlass.Int8, 6]
    wide: cute.struct.Align[cutlass.Int16, 8]


def test_union_members_share_offset_zero():
    assert all(Overlay.offset_of(n) == 0 for n in ("word", "bytes_", "wide"))
    assert Overlay.__alignof__() == 8
    assert Overlay.size_in_bytes() == 8  # the 6-byte member rounded up to 8


def test_struct_declaration_errors():
    with pytest.raises(TypeError, match="has no members"):
        @cute.struct
        class Empty:
            pass
    with pytest.raises(ValueError, match="power of two"):
        cute.struct.Align[cutlass.Int32, 12]
    with pytest.raises(TypeError, match="unsupported member type"):
        @cute.struct
        class Bad:
            x: int


def test_smem_capacity_table():
    assert utils.get_smem_capacity_in_bytes("sm_80") == 163 * 1024
    assert utils.get_smem_capacity_in_bytes("sm_90") == 232448
    assert utils.get_smem_capacity_in_bytes("sm_90a") == 232448
    assert utils.get_smem_capacity_in_bytes("sm_86") == 99 * 1024
    with pytest.raises(ValueError, match="unknown architecture"):
        utils.get_smem_capacity_in_bytes("sm_42")


# ---- the allocator in a kernel -------------------------------------------------------------------

@cute.kernel
def allocator_kernel(out: cute.Tensor, dst_vals: cute.Tensor, dst_tensor: cute.Tensor, texts: cutlass.Constexpr):
    allocator = cutlass.utils.SmemAllocator()
    one = allocator.allocate(cutlass.Int32)                       # 0..4
    storage = allocator.allocate(Strict)                          # aligned to 128: 128..640
    section = allocator.allocate(64, byte_alignment=128)          # 640..704
    array = allocator.allocate_array(element_type=cutlass.Int64, num_elems=14)  # 704..816
    tensor = allocator.allocate_tensor(element_type=cutlass.Float32, layout=cute.make_layout((16, 2)),
                                       byte_alignment=32, swizzle=None)        # 832..960
    texts.extend([str(one), str(storage.values.data_ptr()), str(storage.count.ptr), str(storage.pair.im.ptr),
                  str(section), str(array), str(tensor)])
    one.store(7)
    storage.count = 16
    storage.pair.re = 1.5
    storage.values[3] = 2.0
    array[13] = 99
    vals = storage.values.get_tensor(cute.make_layout((8, 4)))
    vals.fill(0.5)
    storage.values[3] = 2.0
    sec = cute.make_tensor(cute.recast_ptr(section, dtype=cutlass.Float32), cute.make_layout(16))
    sec.fill(3.0)
    tensor.fill(4.0)
    dst_vals.store(vals.load())
    dst_tensor.store(tensor.load())
    out[0] = cute.arch.dynamic_smem_size()
    out[1] = one.load()
    out[2] = storage.count.load()
    out[3] = array[13]
    out[4] = cutlass.Int32(storage.pair.re.load() * 2.0)
    out[5] = cutlass.Int32(sec[15])


@cute.jit
def allocator_host(out: cute.Tensor, dst_vals: cute.Tensor, dst_tensor: cute.Tensor, texts: cutlass.Constexpr):
    allocator_kernel(out, dst_vals, dst_tensor, texts).launch(grid=(1, 1, 1), block=(1, 1, 1))  # smem inferred


@pytest.mark.parametrize("target", TARGETS)
def test_allocator_places_and_fills_everything(target):
    dev = Device(target)
    out, vals, ten = (dev.array(np.zeros(8, np.int32)), dev.array(np.zeros((8, 4), np.float32)),
                      dev.array(np.zeros((16, 2), np.float32)))
    texts = []
    dev.run(allocator_host, tuple(from_dlpack(x) for x in (out, vals, ten)), (texts,))
    out, vals, ten = dev.numpy(out), dev.numpy(vals), dev.numpy(ten)
    assert texts == ["ptr<i32, smem, align<1024>>", "ptr<f32, smem, align<128>>", "ptr<i64, smem, align<128>>",
                     "ptr<f32, smem>", "ptr<i8, smem, align<128>>", "ptr<i64, smem, align<64>>",
                     "tensor<ptr<f32, smem, align<64>> o (16,2):(1,16)>"]
    assert list(out[:6]) == [960, 7, 16, 99, 3, 3]
    expect = np.full((8, 4), 0.5, np.float32)
    expect[3, 0] = 2.0  # values[3] is element 3 of the column-major (8,4) view
    np.testing.assert_array_equal(vals, expect)
    np.testing.assert_array_equal(ten, np.full((16, 2), 4.0, np.float32))


@cute.kernel
def no_smem_kernel(out: cute.Tensor):
    out[0] = cute.arch.dynamic_smem_size()


@cute.kernel
def some_smem_kernel(out: cute.Tensor):
    allocator = cutlass.utils.SmemAllocator()
    allocator.allocate(Natural)
    allocator.allocate(512, byte_alignment=64)
    out[1] = cute.arch.dynamic_smem_size()


@cute.jit
def inferred_host(out: cute.Tensor):
    no_smem_kernel(out).launch(grid=(1, 1, 1), block=(1, 1, 1))
    some_smem_kernel(out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_launch_infers_the_dynamic_size():
    out = np.full(2, -1, np.int32)
    cute.compile(inferred_host, from_dlpack(out), options="--target cpu")(from_dlpack(out))
    assert out[0] == 0
    assert out[1] == 192 + 512  # Natural (176 -> 192 after 64-byte alignment of the next block) + 512


@cute.jit
def insufficient_host(out: cute.Tensor):
    some_smem_kernel(out).launch(grid=(1, 1, 1), block=(1, 1, 1), smem=16)


def test_launch_with_less_smem_than_allocated_warns():
    out = np.zeros(2, np.int32)
    with pytest.warns(UserWarning, match="smem=16 bytes is less than the 704 bytes"):
        cute.compile(insufficient_host, from_dlpack(out), options="--target cpu")


# ---- large allocations -----------------------------------------------------------------------------

@cute.kernel
def big_kernel(a: cute.Tensor, out: cute.Tensor, n: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    allocator = cutlass.utils.SmemAllocator()
    buf = allocator.allocate_tensor(cutlass.Float32, cute.make_layout(n), byte_alignment=16)
    for i in cutlass.range(tidx, n, 128):
        buf[i] = a[i]
    cute.arch.sync_threads()
    for i in cutlass.range(tidx, n, 128):
        out[i] = buf[n - 1 - i]


@cute.jit
def big_host(a: cute.Tensor, out: cute.Tensor, n: cutlass.Constexpr):
    big_kernel(a, out, n).launch(grid=(1, 1, 1), block=(128, 1, 1))


@pytest.mark.parametrize("target", TARGETS)
def test_more_than_48_kb_of_shared_memory(target):
    dev = Device(target)
    n = 150 * 1024 // 4  # 150 KiB: fits sm_80 and sm_90 (the launch raises the function's limit)
    a = np.arange(n, dtype=np.float32)
    out = dev.array(np.zeros_like(a))
    dev.run(big_host, (dev.array(a), out), (n,), options="--gpu-arch sm_80" if target == "cpu" else "")
    np.testing.assert_array_equal(dev.numpy(out), a[::-1])


def test_allocation_beyond_the_capacity_is_an_error_at_the_users_line():
    n = 200 * 1024 // 4  # 200 KiB: more than sm_80's 163 KiB
    a = np.zeros(n, np.float32)
    with pytest.raises(cutlass.DSLUserCodeError, match="more than the 166912 bytes a block may use on sm_80") as e:
        cute.compile(big_host, from_dlpack(a), from_dlpack(a), n, options="--target cpu --gpu-arch sm_80")
    assert "test_smem_struct.py" in str(e.value)


@cute.kernel
def branch_alloc_kernel(a: cute.Tensor, out: cute.Tensor, n: cutlass.Constexpr):
    # Two 100 KiB buffers, one on each path of a dynamic `if` (NVIDIA's fp16_gemm_4 mega-kernel):
    # together more than sm_80's 163 KiB, each alone within it.
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    allocator = cutlass.utils.SmemAllocator()
    if bidx == 0:
        buf = allocator.allocate_tensor(cutlass.Float32, cute.make_layout(n), byte_alignment=16)
        for i in cutlass.range(tidx, n, 128):
            buf[i] = a[i] + 1.0
        cute.arch.sync_threads()
        for i in cutlass.range(tidx, n, 128):
            out[i] = buf[n - 1 - i]
    else:
        buf = allocator.allocate_tensor(cutlass.Float32, cute.make_layout(n), byte_alignment=16)
        for i in cutlass.range(tidx, n, 128):
            buf[i] = a[i] * 2.0
        cute.arch.sync_threads()
        for i in cutlass.range(tidx, n, 128):
            out[n + i] = buf[i]


@cute.jit
def branch_alloc_host(a: cute.Tensor, out: cute.Tensor, n: cutlass.Constexpr, merge: cutlass.Constexpr):
    branch_alloc_kernel(a, out, n).launch(grid=(2, 1, 1), block=(128, 1, 1), smem_merge_branch_allocs=merge)


def test_merged_branch_allocations_share_their_offset():
    n = 100 * 1024 // 4
    a = np.arange(n, dtype=np.float32)
    out = np.zeros(2 * n, np.float32)
    cute.compile(branch_alloc_host, a, out, n, True, options="--target cpu --gpu-arch sm_80")(a, out)
    np.testing.assert_array_equal(out, np.concatenate([(a + 1)[::-1], a * 2]))
    with pytest.raises(cutlass.DSLUserCodeError, match="102400 bytes at offset 102400"):
        cute.compile(branch_alloc_host, a, out, n, False, options="--target cpu --gpu-arch sm_80")


@cute.kernel
def oversized_struct_kernel():
    @cute.struct
    class Huge:
        a: cute.struct.MemRange[cutlass.Float16, 120 * 1024]

    cutlass.utils.SmemAllocator().allocate(Huge)


@cute.jit
def oversized_struct_host():
    oversized_struct_kernel().launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_oversized_struct_is_an_error():
    with pytest.raises(cutlass.DSLUserCodeError, match="245760 bytes at offset 0"):
        cute.compile(oversized_struct_host, options="--target cpu --gpu-arch sm_90a")


def test_allocator_outside_a_kernel_is_an_error():
    @cute.jit
    def f():
        cutlass.utils.SmemAllocator()

    with pytest.raises(cutlass.DSLUserCodeError, match="SmemAllocator can only be used inside a @cute.kernel"):
        cute.compile(f, options="--target cpu")


# ---- swizzled views of struct members ---------------------------------------------------------------

def swizzle_model(b, m, s, x):
    x = np.asarray(x, dtype=np.int64)
    return x ^ ((x >> s) & (((1 << b) - 1) << m))


@cute.struct
class Tiles:
    a: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, 16 * 64], 16]
    b: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, 16 * 64], 16]


@cute.kernel
def pointer_swizzle_kernel(out_ptr_form: cute.Tensor, out_layout_form: cute.Tensor, texts: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    allocator = cutlass.utils.SmemAllocator()
    storage = allocator.allocate(Tiles.size_in_bytes(), byte_alignment=16)
    outer = cute.tile_to_shape(cute.make_layout((8, 64), stride=(64, 1)), (16, 64), (0, 1))
    # The pointer form counts the swizzle in bytes (16-byte units: M=4) on the address ...
    ptr_form = Tiles(storage).a.get_tensor(outer, swizzle=cute.make_swizzle(3, 4, 3))
    # ... the layout form in elements (8 halves: M=3) on the offset.
    layout_form = Tiles(storage).b.get_tensor(
        cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, outer))
    texts.extend([str(ptr_form), ptr_form.type, str(layout_form)])
    for k in cutlass.range_constexpr(8):
        i = tidx + 128 * k
        ptr_form[i] = cutlass.Float16(i)
        layout_form[i] = cutlass.Float16(i)
    cute.arch.sync_threads()
    flat_a = Tiles(storage).a.get_tensor(cute.make_layout(1024))
    flat_b = Tiles(storage).b.get_tensor(cute.make_layout(1024))
    for k in cutlass.range_constexpr(8):
        out_ptr_form[tidx + 128 * k] = flat_a[tidx + 128 * k]
        out_layout_form[tidx + 128 * k] = flat_b[tidx + 128 * k]


@cute.jit
def pointer_swizzle_host(out_a: cute.Tensor, out_b: cute.Tensor, texts: cutlass.Constexpr):
    pointer_swizzle_kernel(out_a, out_b, texts).launch(grid=(1, 1, 1), block=(128, 1, 1))


@pytest.mark.parametrize("target", TARGETS)
def test_pointer_swizzle_in_bytes_matches_layout_swizzle_in_elements(target):
    dev = Device(target)
    a, b = dev.array(np.zeros(1024, np.float16)), dev.array(np.zeros(1024, np.float16))
    texts = []
    dev.run(pointer_swizzle_host, (a, b), (texts,))
    a, b = dev.numpy(a), dev.numpy(b)
    assert texts[0] == "tensor<ptr<f16, smem, align<1024>, S<3,4,3>> o (16,64):(64,1)>"
    assert texts[1] == '!cute.memref<f16, smem, align<1024>, S<3,4,3>, "(16,64):(64,1)">'
    assert texts[2] == "tensor<ptr<f16, smem, align<1024>> o S<3,3,3> o 0 o (16,64):(64,1)>"
    i = np.arange(1024)
    offset = (i % 16) * 64 + i // 16  # column-major linear index into (16,64):(64,1)
    expect = np.zeros(1024, np.float16)
    # Member a starts at byte 0 of the 1024-aligned allocator base: the byte swizzle S<3,4,3>
    # of 2*offset, in halves.
    expect[swizzle_model(3, 4, 3, 2 * offset) // 2] = i
    np.testing.assert_array_equal(a, expect)
    expect_b = np.zeros(1024, np.float16)
    expect_b[swizzle_model(3, 3, 3, offset)] = i
    np.testing.assert_array_equal(b, expect_b)
    np.testing.assert_array_equal(a, b)  # the two spellings of one swizzle agree


def test_get_tensor_with_a_composed_layout_and_a_swizzle_is_a_type_error():
    @cute.kernel
    def k():
        storage = cutlass.utils.SmemAllocator().allocate(Tiles)
        storage.a.get_tensor(cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((16, 64))),
                             swizzle=cute.make_swizzle(3, 4, 3))

    @cute.jit
    def f():
        k().launch(grid=(1, 1, 1), block=(1, 1, 1))

    with pytest.raises(TypeError, match="already holds its swizzle"):
        cute.compile(f, options="--target cpu")


def test_get_tensor_larger_than_the_member_is_an_error():
    @cute.kernel
    def k():
        storage = cutlass.utils.SmemAllocator().allocate(Tiles)
        storage.a.get_tensor(cute.make_layout((32, 64)))

    @cute.jit
    def f():
        k().launch(grid=(1, 1, 1), block=(1, 1, 1))

    with pytest.raises(cutlass.DSLUserCodeError, match="more than the MemRange"):
        cute.compile(f, options="--target cpu")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_pointer_swizzle_and_dynamic_smem_ptx_is_accepted(arch):
    b = np.zeros(1024, np.float16)
    toolchain.require_cubin()
    compiled = cute.compile(pointer_swizzle_host, from_dlpack(b), from_dlpack(b), [],
                            options=f"--gpu-arch {arch}")
    toolchain.ptx_of(compiled)
    assert compiled.__cubin__
    assert ".extern .shared .align 1024" in compiled.__ptx__  # the allocator's base alignment


class _Reducer:
    """The pattern of NVIDIA's cta_norm: a @cute.jit method called from the kernel allocates."""

    @cute.jit
    def block_sum(self, value: cutlass.Float32, tidx: cutlass.Int32):
        acc = cutlass.utils.SmemAllocator().allocate_tensor(cutlass.Float32, 4)  # one slot per warp
        value = value + cute.arch.shuffle_sync_bfly(value, offset=16)
        value = value + cute.arch.shuffle_sync_bfly(value, offset=8)
        value = value + cute.arch.shuffle_sync_bfly(value, offset=4)
        value = value + cute.arch.shuffle_sync_bfly(value, offset=2)
        value = value + cute.arch.shuffle_sync_bfly(value, offset=1)
        if tidx % 32 == 0:
            acc[tidx // 32] = value
        cute.arch.sync_threads()
        return acc[0] + acc[1] + acc[2] + acc[3]

    @cute.kernel
    def kernel(self, a: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        first = self.block_sum(a[tidx], tidx)
        second = self.block_sum(a[tidx] * 2.0, tidx)  # a second allocation, after the first
        if tidx == 0:
            out[0] = first
            out[1] = second
            out[2] = cutlass.Float32(cute.arch.dynamic_smem_size())

    @cute.jit
    def __call__(self, a: cute.Tensor, out: cute.Tensor):
        self.kernel(a, out).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_allocations_in_jit_helpers_called_from_the_kernel():
    a = np.arange(128, dtype=np.float32)
    out = np.zeros(3, np.float32)
    r = _Reducer()
    cute.compile(r, from_dlpack(a), from_dlpack(out), options="--target cpu")(from_dlpack(a), from_dlpack(out))
    assert out[0] == a.sum() and out[1] == 2 * a.sum()
    assert out[2] == 32  # two 16-byte tensors, inferred for the launch


# ---- the tensor-core GEMM storage pattern: one byte block viewed as two structs ----------------

@cute.kernel
def staged_kernel(a: cute.Tensor, out: cute.Tensor, c_out: cute.Tensor, stage: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    s_layout = cute.tile_to_shape(cute.make_layout((8, 64), stride=(64, 1)), (16, 64, 3), (0, 1, 2))

    @cute.struct
    class StorageAB:
        a: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, cute.cosize(s_layout)], 16]

    @cute.struct
    class StorageC:
        c: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, 16 * 64], 16]

    allocator = cutlass.utils.SmemAllocator()
    storage = allocator.allocate(max(StorageAB.size_in_bytes(), StorageC.size_in_bytes()), byte_alignment=16)
    sA = StorageAB(storage).a.get_tensor(s_layout, swizzle=cute.make_swizzle(3, 4, 3))
    copy = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16,
                                                       num_bits_per_copy=128),
                                   cute.make_layout((16, 8), stride=(8, 1)), cute.make_layout((1, 8)))
    thr = copy.get_slice(tidx)
    tAsA = thr.partition_D(sA)  # (CPY, CPY_M, CPY_K, PIPE)
    cute.copy(copy, thr.partition_S(a), tAsA[None, None, None, stage])
    cute.arch.sync_threads()
    cute.copy(copy, tAsA[None, None, None, stage], thr.partition_D(out))
    cute.arch.sync_threads()
    # The same bytes re-viewed as the epilogue's storage.
    sC = StorageC(storage).c.get_tensor(cute.make_layout((16, 64), stride=(64, 1)))
    for k in cutlass.range_constexpr(8):
        i = tidx + 128 * k
        sC[i] = cutlass.Float32(i)
    cute.arch.sync_threads()
    for k in cutlass.range_constexpr(8):
        i = tidx + 128 * k
        c_out[i] = sC[i]


@cute.jit
def staged_host(a: cute.Tensor, out: cute.Tensor, c_out: cute.Tensor, stage: cutlass.Int32):
    staged_kernel(a, out, c_out, stage).launch(grid=(1, 1, 1), block=(128, 1, 1))


@pytest.mark.parametrize("stage", [0, 2])
@pytest.mark.parametrize("target", TARGETS)
def test_gemm_style_staged_swizzled_storage(target, stage):
    dev = Device(target)
    a = (np.arange(16 * 64) % 1500).astype(np.float16).reshape(16, 64)
    out, c_out = dev.array(np.zeros_like(a)), dev.array(np.zeros((16, 64), np.float32))
    compiled = dev.run(staged_host, (*(from_dlpack(x, assumed_align=16) for x in (dev.array(a), out, c_out)), stage))
    out, c_out = dev.numpy(out), dev.numpy(c_out)
    np.testing.assert_array_equal(out, a)
    # sC[i] and c_out[i] both take i as a column-major (colexicographic) index of (16, 64).
    np.testing.assert_array_equal(c_out, np.arange(16 * 64, dtype=np.float32).reshape(64, 16).T)
    # 16-byte accesses survive the byte-address swizzle (runs of 16 bytes stay together).
    assert "vector<8xf16>" in compiled.__mlir__ or "<8 x" in compiled.__mlir__


def test_postponed_annotations_are_evaluated_where_the_struct_is_written():
    code = """
from __future__ import annotations
import cutlass, cutlass.cute as cute

def make(n):
    @cute.struct
    class Late:
        head: cutlass.Int8
        data: cute.struct.MemRange[cutlass.Float32, n]
    return Late
"""
    scope = {}
    exec(compile(code, "<postponed>", "exec"), scope)
    late = scope["make"](5)
    assert late.offset_of("data") == 4 and late.size_in_bytes() == 24


@cute.kernel
def dynamic_size_kernel(n: cutlass.Int32):
    cutlass.utils.SmemAllocator().allocate(n)


@cute.jit
def dynamic_size_host(n: cutlass.Int32):
    dynamic_size_kernel(n).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_allocation_sizes_must_be_static():
    with pytest.raises(cutlass.DSLUserCodeError, match="static integer") as e:
        cute.compile(dynamic_size_host, 4, options="--target cpu")
    assert "test_smem_struct.py" in str(e.value)
    assert cute.struct.MemRange[cutlass.Float32, cutlass.Int32(3)].count == 3  # static DSL ints are fine


@cute.kernel
def static_and_dynamic_kernel(n: cutlass.Constexpr):
    cute.arch.alloc_smem(cutlass.Float32, 16 * 1024)  # 64 KiB static
    cutlass.utils.SmemAllocator().allocate(n)


@cute.jit
def static_and_dynamic_host(n: cutlass.Constexpr):
    static_and_dynamic_kernel(n).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_static_shared_memory_counts_against_the_capacity():
    cute.compile(static_and_dynamic_host, 99 * 1024, options="--target cpu --gpu-arch sm_80")  # 64 + 99 <= 163 KiB
    with pytest.raises(cutlass.DSLUserCodeError, match="after 65536 bytes of static shared memory, more than the "
                                                       "166912 bytes"):
        cute.compile(static_and_dynamic_host, 100 * 1024, options="--target cpu --gpu-arch sm_80")


@cute.jit
def explicit_smem_host():
    no_smem_kernel_static().launch(grid=(1, 1, 1), block=(1, 1, 1), smem=200 * 1024)


@cute.kernel
def no_smem_kernel_static():
    cute.arch.alloc_smem(cutlass.Int32, 4)


def test_explicit_launch_size_beyond_the_capacity_is_an_error():
    with pytest.raises(cutlass.DSLUserCodeError, match="asks for 204800 bytes of dynamic shared memory"):
        cute.compile(explicit_smem_host, options="--target cpu --gpu-arch sm_80")


# ---- MemRange.get_tensor given a shape: the compact layout over it (quack's tile_count buffer,
# `storage.tile_count.get_tensor((stages,))`) -------------------------------------------------------

@cute.struct
class Counters:
    counts: cute.struct.MemRange[cutlass.Int32, 6]


@cute.kernel
def shape_tensor_kernel(out: cute.Tensor, texts: cutlass.Constexpr):
    storage = cutlass.utils.SmemAllocator().allocate(Counters)
    by_shape = storage.counts.get_tensor((2, 3))
    texts.append(str(by_shape.layout))
    for i in range(6):
        storage.counts[i] = i * 10
    for i in range(2):
        for j in range(3):
            out[i, j] = by_shape[i, j]


@cute.jit
def shape_tensor_host(out: cute.Tensor, texts: cutlass.Constexpr):
    shape_tensor_kernel(out, texts).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_mem_range_get_tensor_takes_a_shape():
    out, texts = np.zeros((2, 3), np.int32), []
    cute.compile(shape_tensor_host, from_dlpack(out), texts, options="--target cpu")(from_dlpack(out))
    assert texts == ["(2,3):(1,2)"]
    np.testing.assert_array_equal(out, np.arange(6).reshape(3, 2).T * 10)  # column-major: [i, j] is i + 2 j


def test_memrange_of_packed_fp4_takes_half_a_byte_per_element():
    @cute.struct
    class Tiles:
        flag: cutlass.Int32
        a: cute.struct.Align[cute.struct.MemRange[cutlass.Float4E2M1FN, 256], 128]

    assert Tiles.size_in_bytes() == 128 + 128
    @cute.struct
    class Odd:  # an odd count takes its last byte whole
        a: cute.struct.MemRange[cutlass.Float4E2M1FN, 3]
        b: cutlass.Int8
    assert Odd.size_in_bytes() == 3


def test_a_scalar_member_stands_for_its_address_where_a_pointer_is_taken():
    # quack's SM100 GEMM hands struct members to mbarrier_init / alloc_tmem without `.ptr`.
    @cute.struct
    class Storage:
        bar: cutlass.Int64
        flag: cutlass.Int32

    @cute.kernel
    def k(out: cute.Tensor):
        storage = cutlass.utils.SmemAllocator().allocate(Storage)
        cute.arch.mbarrier_init(storage.bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.mbarrier_arrive(storage.bar)
        cute.arch.mbarrier_wait(storage.bar, 0)
        storage.flag.store(cutlass.Int32(7))
        out[0] = storage.flag.load()

    @cute.jit
    def host(out: cute.Tensor):
        k(out).launch(grid=(1, 1, 1), block=(1, 1, 1))

    out = np.zeros(1, np.int32)
    host(out)
    assert out[0] == 7
