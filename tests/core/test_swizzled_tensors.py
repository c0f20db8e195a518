"""Tensors over swizzled (composed) layouts, as tensor-core kernels lay out shared memory:
element addresses against a numpy model of the swizzle, slices, tiled-copy partitions and copies
through shared memory on the emulator."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from test_arch import TARGETS, Device
import toolchain


def swizzle_model(b, m, s, offset):
    """CuTe's Swizzle<B,M,S> on an integer array: the B bits at M+S xor-ed into the B bits at M."""
    offset = np.asarray(offset, dtype=np.int64)
    mask = (1 << b) - 1
    return offset ^ ((offset >> s) & (mask << m))


def test_swizzle_model_matches_the_layout_layer():
    sw = cute.make_swizzle(3, 4, 3)
    xs = np.arange(2048)
    assert [sw(int(x)) for x in xs] == list(swizzle_model(3, 4, 3, xs))


# ---- element addresses --------------------------------------------------------------------------

@cute.kernel
def scatter_kernel(out: cute.Tensor, b: cutlass.Constexpr, m: cutlass.Constexpr, s: cutlass.Constexpr,
                   offset: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    ptr = cute.arch.alloc_smem(cutlass.Int32, 1024, alignment=16)
    outer = cute.make_layout((8, 64), stride=(64, 1))
    swizzled = cute.make_tensor(ptr, cute.make_composed_layout(cute.make_swizzle(b, m, s), offset, outer))
    plain = cute.make_tensor(ptr, cute.make_layout(1024))
    for k in cutlass.range_constexpr(8):
        plain[tidx + 128 * k] = -1
    cute.arch.sync_threads()
    for k in cutlass.range_constexpr(4):
        i = tidx + 128 * k
        swizzled[i] = i  # a linear index into (8,64)
    cute.arch.sync_threads()
    for k in cutlass.range_constexpr(8):
        out[tidx + 128 * k] = plain[tidx + 128 * k]


@cute.jit
def scatter_host(out: cute.Tensor, b: cutlass.Constexpr, m: cutlass.Constexpr, s: cutlass.Constexpr,
                 offset: cutlass.Constexpr):
    scatter_kernel(out, b, m, s, offset).launch(grid=(1, 1, 1), block=(128, 1, 1))


@pytest.mark.parametrize("bms,offset", [((3, 3, 3), 0), ((2, 4, 3), 0), ((3, 4, 3), 0), ((3, 3, 3), 40),
                                        ((3, 3, 3), 512)])
@pytest.mark.parametrize("target", TARGETS)
def test_element_addresses_follow_the_swizzle(target, bms, offset):
    dev = Device(target)
    out = dev.array(np.zeros(1024, np.int32))
    dev.run(scatter_host, (out,), (*bms, offset))
    out = dev.numpy(out)
    i = np.arange(512)
    expect = np.full(1024, -1, np.int32)
    expect[swizzle_model(*bms, offset + (i % 8) * 64 + i // 8)] = i
    np.testing.assert_array_equal(out, expect)


# ---- slices ---------------------------------------------------------------------------------------

@cute.kernel
def slice_kernel(out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    ptr = cute.arch.alloc_smem(cutlass.Int32, 2048, alignment=16)
    atom = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
    staged = cute.make_tensor(ptr, cute.tile_to_shape(atom, (16, 64, 2), (0, 1, 2)))
    plain = cute.make_tensor(ptr, cute.make_layout(2048))
    for k in cutlass.range_constexpr(16):
        plain[tidx + 128 * k] = -1
    cute.arch.sync_threads()
    stage = tidx // 64
    col = tidx % 64
    column = staged[None, col, stage]  # 16 rows of one column of one stage
    for r in cutlass.range_constexpr(16):
        column[r] = r * 10000 + col * 10 + stage
    cute.arch.sync_threads()
    for k in cutlass.range_constexpr(16):
        out[tidx + 128 * k] = plain[tidx + 128 * k]


@cute.jit
def slice_host(out: cute.Tensor):
    slice_kernel(out).launch(grid=(1, 1, 1), block=(128, 1, 1))


def staged_offset(r, c, stage):
    """tile_to_shape(S<3,3,3> o (8,64):(64,1), (16,64,2)): 8-row atoms stacked down M, then stages."""
    return swizzle_model(3, 3, 3, (r % 8) * 64 + c + (r // 8) * 512) + stage * 1024


def test_slices_with_dynamic_coordinates():
    out = np.zeros(2048, np.int32)
    cute.compile(slice_host, out, options="--target cpu")(out)
    expect = np.full(2048, -1, np.int32)
    for stage in range(2):
        for c in range(64):
            for r in range(16):
                expect[staged_offset(r, c, stage)] = r * 10000 + c * 10 + stage
    np.testing.assert_array_equal(out, expect)


def test_tile_to_shape_of_a_swizzled_atom():
    atom = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
    staged = cute.tile_to_shape(atom, (16, 64, 2), (0, 1, 2))
    # Hand-computed: the atom's rows, then the second atom below it (+512 = 8 rows of 64, so the
    # two row modes coalesce into 16:64), then stages (+1024).
    assert str(staged) == "S<3,3,3> o 0 o (16,64,2):(64,1,1024)"
    for r in range(16):
        for c in range(0, 64, 7):
            for s in range(2):
                assert staged((r, c, s)) == staged_offset(r, c, s)


def test_tensor_prints_its_composed_layout():
    @cute.jit
    def show():
        ptr = cute.arch.alloc_smem(cutlass.Float16, 1024, alignment=128)
        atom = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
        t = cute.make_tensor(ptr, cute.tile_to_shape(atom, (8, 64, 2), (0, 1, 2)))
        texts.append(str(t))
        texts.append(str(t.layout))
        texts.append(str(t[None, None, 1]))
        texts.append(str(t[(None, 3, 0)]))

    texts = []

    @cute.kernel
    def k():
        show()

    @cute.jit
    def host():
        k().launch(grid=(1, 1, 1), block=(1, 1, 1))

    cute.compile(host, options="--target cpu")
    assert texts[0] == "tensor<ptr<f16, smem, align<128>> o S<3,3,3> o 0 o (8,64,2):(64,1,512)>"
    assert texts[1] == "S<3,3,3> o 0 o (8,64,2):(64,1,512)"
    # The stage offset (512 elements) commutes with the swizzle: it moves the pointer.
    assert texts[2] == "tensor<ptr<f16, smem, align<128>> o S<3,3,3> o 0 o (8,64):(64,1)>"
    # A column offset (3) does not: it stays inside the swizzle.
    assert texts[3] == "tensor<ptr<f16, smem, align<128>> o S<3,3,3> o 3 o (8):(64)>"


# ---- tiled copies through swizzled shared memory ---------------------------------------------------

@cute.kernel
def roundtrip_kernel(src: cute.Tensor, dst: cute.Tensor, raw: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    ptr = cute.arch.alloc_smem(cutlass.Float16, 16 * 64, alignment=128)
    atom = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
    smem = cute.make_tensor(ptr, cute.tile_to_shape(atom, (16, 64), (0, 1)))
    # Load: 128 threads, 8 contiguous halves (16 bytes) each along K.
    load = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16,
                                                       num_bits_per_copy=128),
                                   cute.make_layout((16, 8), stride=(8, 1)), cute.make_layout((1, 8)))
    thr_load = load.get_slice(tidx)
    cute.copy(load, thr_load.partition_S(src), thr_load.partition_D(smem))
    cute.arch.sync_threads()
    # Store back with a different thread arrangement (2x4 values per thread).
    store = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16),
                                    cute.make_layout((8, 16), stride=(16, 1)), cute.make_layout((2, 4), stride=(4, 1)))
    thr_store = store.get_slice(tidx)
    cute.copy(store, thr_store.partition_S(smem), thr_store.partition_D(dst))
    flat = cute.make_tensor(ptr, cute.make_layout(16 * 64))
    for k in cutlass.range_constexpr(8):
        raw[tidx + 128 * k] = flat[tidx + 128 * k]


@cute.jit
def roundtrip_host(src: cute.Tensor, dst: cute.Tensor, raw: cute.Tensor):
    roundtrip_kernel(src, dst, raw).launch(grid=(1, 1, 1), block=(128, 1, 1))


@pytest.mark.parametrize("target", TARGETS)
def test_copy_through_swizzled_shared_memory_is_the_identity(target):
    dev = Device(target)
    a = (np.arange(16 * 64) % 2000).astype(np.float16).reshape(16, 64)
    b, raw = dev.array(np.zeros_like(a)), dev.array(np.zeros(16 * 64, np.float16))
    from cutlass.cute.runtime import from_dlpack
    compiled = dev.run(roundtrip_host, tuple(from_dlpack(x, assumed_align=16) for x in (dev.array(a), b, raw)))
    b, raw = dev.numpy(b), dev.numpy(raw)
    np.testing.assert_array_equal(b, a)
    r, c = np.meshgrid(np.arange(16), np.arange(64), indexing="ij")
    expect = np.zeros(16 * 64, np.float16)
    expect[swizzle_model(3, 3, 3, (r % 8) * 64 + c + (r // 8) * 512).ravel()] = a.ravel()
    np.testing.assert_array_equal(raw, expect)
    # The 16-byte accesses survive the swizzle (runs of 2^3 halves stay contiguous).
    assert "vector<8xf16>" in compiled.__mlir__ or "<8 x" in compiled.__mlir__


# ---- errors --------------------------------------------------------------------------------------

def test_register_tensors_cannot_be_swizzled():
    @cute.jit
    def f():
        cute.make_rmem_tensor(cute.make_composed_layout(cute.make_swizzle(2, 0, 3), 0, cute.make_layout(32)),
                              cutlass.Float32)

    with pytest.raises(cutlass.cute.DSLUserCodeError, match="register and coordinate tensors take a plain layout"):
        cute.compile(f, options="--target cpu")


def test_composed_layout_with_a_layout_inner_cannot_back_a_tensor():
    @cute.kernel
    def k():
        ptr = cute.arch.alloc_smem(cutlass.Float32, 64)
        cute.make_tensor(ptr, cute.make_composed_layout(cute.make_layout(64, stride=2), 0, cute.make_layout(32)))

    @cute.jit
    def f():
        k().launch(grid=(1, 1, 1), block=(1, 1, 1))

    with pytest.raises(cutlass.cute.DSLUserCodeError, match="need a swizzle as the inner function"):
        cute.compile(f, options="--target cpu")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_swizzled_copy_ptx_is_accepted(arch):
    from cutlass.cute.runtime import from_dlpack
    a = np.zeros((16, 64), np.float16)
    toolchain.require_cubin()
    compiled = cute.compile(roundtrip_host, from_dlpack(a), from_dlpack(a), from_dlpack(a.ravel()),
                            options=f"--gpu-arch {arch}")
    toolchain.ptx_of(compiled)
    assert compiled.__cubin__  # nvJitLink linked the PTX for `arch`
    # The 128-bit copy atom's stores into swizzled shared memory stay 16-byte vectors.
    assert "st.shared.v4.b32" in compiled.__ptx__


# ---- helpers around swizzled tensors -----------------------------------------------------------

def test_select_cosize_and_size_in_bytes_of_composed_layouts():
    atom = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
    staged = cute.tile_to_shape(atom, (16, 64, 3), (0, 1, 2))
    assert str(cute.select(staged, mode=[0, 1])) == "S<3,3,3> o 0 o (16,64):(64,1)"
    assert str(cute.select(staged, mode=[2, 0])) == "S<3,3,3> o 0 o (3,16):(1024,64)"
    assert cute.cosize(staged) == 3 * 1024
    assert cute.size_in_bytes(cutlass.Float16, staged) == 3 * 1024 * 2
    assert cute.size_in_bytes(cutlass.Float32, cute.make_layout((4, 3), stride=(3, 1))) == 48
    assert cute.size_in_bytes(cutlass.Float16, None) == 0
    assert cute.size_in_bytes(cutlass.Boolean, cute.make_layout(12)) == 2  # 12 bits -> 2 bytes


@cute.kernel
def helpers_kernel(g: cute.Tensor, out: cute.Tensor, texts: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    ptr = cute.arch.alloc_smem(cutlass.Float16, 2 * 16 * 64, alignment=128)
    atom = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
    s = cute.make_tensor(ptr, cute.tile_to_shape(atom, (16, 64, 2), (0, 1, 2)))
    texts.append(cute.cosize(s))
    # local_tile of a swizzled tensor: the (8,32) tile (1, 1) of stage 1.
    tile = cute.local_tile(s[None, None, 1], (8, 32), (1, 1))
    texts.append(str(tile))
    # A register fragment like a swizzled tile is a plain compact tensor.
    frag = cute.make_rmem_tensor_like(tile)
    texts.append(str(frag.layout))
    # recast to 32-bit: pairs of halves, the swizzle recast with them.
    wide = cute.recast_tensor(s, cutlass.Int32)
    texts.append(str(wide.layout))
    for k in cutlass.range_constexpr(16):
        s[tidx + 128 * k] = cutlass.Float16(tidx + 128 * k)
    cute.arch.sync_threads()
    if tidx == 0:
        for i in cutlass.range_constexpr(8):
            for j in cutlass.range_constexpr(32):
                frag[i, j] = tile[i, j]
        for i in cutlass.range_constexpr(8):
            for j in cutlass.range_constexpr(32):
                out[i, j] = frag[i, j]
        # domain_offset: element (0, 0) of the shifted view is element (3, 5) of stage 0.
        shifted = cute.domain_offset((3, 5, 0), s)
        out[8, 0] = shifted[0, 0, 0]
        out[8, 1] = shifted[2, 7, 1]
        # recast: one Int32 holds the halves at swizzled element offsets 2k and 2k+1.
        bits = wide[5, 3, 0]
        out[8, 2] = cutlass.Float16(bits & 0xFFFF)
        # gmem pointer rounded up to 16 bytes.
        p = (g.iterator + 1).align(16)
        texts.append(str(p))
        out[8, 3] = cutlass.Float16(p.toint() - g.iterator.toint())


@cute.jit
def helpers_host(g: cute.Tensor, out: cute.Tensor, texts: cutlass.Constexpr):
    helpers_kernel(g, out, texts).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_tile_fragment_domain_offset_recast_and_align_on_swizzled_tensors():
    from cutlass.cute.runtime import from_dlpack
    g = np.zeros(64, np.float16)
    out = np.zeros((9, 32), np.float32)
    texts = []
    cute.compile(helpers_host, from_dlpack(g, assumed_align=16), from_dlpack(out), texts,
                 options="--target cpu")(from_dlpack(g, assumed_align=16), from_dlpack(out))
    assert texts[0] == 2048
    # Stage 1 moves the pointer by 1024 halves; tile (1,1) starts at row 8 (a whole atom below:
    # +512, also above the swizzle bits) and column 32 (inside the swizzle: stays in the offset).
    assert texts[1] == "tensor<ptr<f16, smem, align<128>> o S<3,3,3> o 32 o (8,32):(64,1)>"
    assert texts[2] == "(8,32):(1,8)"
    assert texts[3] == "S<3,2,3> o 0 o (16,32,2):(32,1,512)"
    assert texts[4].startswith("ptr<f16, ") and texts[4].endswith(", align<16>>")

    def value_at(r, c, stage):  # what the kernel stored: the linear index of (r, c, stage)
        return r + 16 * c + 1024 * stage

    # The kernel stored linear index i at s[i]; reading s back through any view gives the
    # coordinates' linear index, whatever the swizzle did to the addresses.
    expect = np.array([[value_at(8 + i, 32 + j, 1) for j in range(32)] for i in range(8)], np.float32)
    np.testing.assert_array_equal(out[:8], expect)
    assert out[8, 0] == value_at(3, 5, 0)
    assert out[8, 1] == value_at(5, 12, 1)
    # wide[5,3,0] covers halves at element offset swizzle(5*64 + 2*3) of stage 0 (pairs stay
    # together: the swizzle never splits 8-half runs). Find which coordinate lives there.
    addr = swizzle_model(3, 3, 3, 5 * 64 + 6)
    r, c = next((r, c) for r in range(16) for c in range(64)
                if swizzle_model(3, 3, 3, (r % 8) * 64 + c + (r // 8) * 512) == addr)
    low_bits = int(np.float16(value_at(r, c, 0)).view(np.uint16))  # the low half of the Int32, as an integer
    assert out[8, 2] == np.float32(np.float16(low_bits))
    assert out[8, 3] == 16  # (base + 2 bytes) rounded up to 16 bytes: 16 bytes past the 16-aligned base


@cute.kernel
def layout_args_kernel(out: cute.Tensor, sw: cute.Swizzle, composed: cute.ComposedLayout, outer: cute.Layout):
    tidx, _, _ = cute.arch.thread_idx()
    ptr = cute.arch.alloc_smem(cutlass.Int32, 512, alignment=16)
    a = cute.make_tensor(ptr, composed)
    a[tidx] = tidx
    b = cute.make_tensor(cute.recast_ptr(ptr, sw), outer)  # the same swizzle, in bytes, on the pointer
    cute.arch.sync_threads()
    out[tidx] = b[tidx]


@cute.jit
def layout_args_host(out: cute.Tensor):
    outer = cute.make_layout((8, 64), stride=(64, 1))
    layout_args_kernel(out, cute.make_swizzle(3, 4, 3),
                       cute.make_composed_layout(cute.make_swizzle(3, 2, 3), 0, outer), outer).launch(
        grid=(1, 1, 1), block=(512, 1, 1))


def test_swizzles_and_composed_layouts_as_kernel_arguments():
    from cutlass.cute.runtime import from_dlpack
    out = np.full(512, -1, np.int32)
    cute.compile(layout_args_host, from_dlpack(out), options="--target cpu")(from_dlpack(out))
    # S<3,2,3> on Int32 elements is S<3,4,3> on bytes: both views see the same element.
    np.testing.assert_array_equal(out, np.arange(512))


# ---- attention-style storage: struct members over swizzled layouts, a transposed view ------------

@cute.kernel
def transpose_view_kernel(v: cute.Tensor, vt_out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    atom = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
    s_layout = cute.tile_to_shape(atom, (32, 128), (0, 1))  # (n_block, head_dim)

    @cute.struct
    class Storage:
        sK: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, cute.cosize(s_layout)], 1024]
        sV: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, cute.cosize(s_layout)], 1024]

    storage = cutlass.utils.SmemAllocator().allocate(Storage)
    sV = storage.sV.get_tensor(s_layout)
    # (head_dim, n_block) view of V, as attention kernels build it for the second GEMM.
    sVt = cute.composition(sV, cute.make_layout((128, 32), stride=(32, 1)))
    copy = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16,
                                                       num_bits_per_copy=128),
                                   cute.make_layout((8, 16), stride=(16, 1)), cute.make_layout((1, 8)))
    thr = copy.get_slice(tidx)
    cute.copy(copy, thr.partition_S(v), thr.partition_D(sV))
    cute.arch.sync_threads()
    for k in cutlass.range_constexpr(32):
        i = tidx + 128 * k
        vt_out[i % 128, i // 128] = sVt[i % 128, i // 128]


@cute.jit
def transpose_view_host(v: cute.Tensor, vt_out: cute.Tensor):
    transpose_view_kernel(v, vt_out).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_transposed_composition_of_a_swizzled_struct_member():
    from cutlass.cute.runtime import from_dlpack
    v = (np.arange(32 * 128) % 1999).astype(np.float16).reshape(32, 128)
    vt = np.zeros((128, 32), np.float16)
    cute.compile(transpose_view_host, from_dlpack(v), from_dlpack(vt), options="--target cpu")(
        from_dlpack(v), from_dlpack(vt))
    np.testing.assert_array_equal(vt, v.T)


@cute.kernel
def values_protocol_kernel(out: cute.Tensor, counts: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    ptr = cute.arch.alloc_smem(cutlass.Int32, 1024, alignment=1024)
    atom = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
    s = cute.make_tensor(ptr, cute.tile_to_shape(atom, (16, 64), (0, 1)))
    part = cute.local_partition(s, cute.make_layout((16, 8), stride=(8, 1)), tidx)  # dynamic swizzle offset
    vals = part.__extract_mlir_values__()
    rebuilt = part.__new_from_mlir_values__(vals)
    for j in cutlass.range_constexpr(8):
        rebuilt[j] = tidx * 8 + j
    cute.arch.sync_threads()
    for j in cutlass.range_constexpr(8):
        out[tidx * 8 + j] = part[j]
    if tidx == 0:
        counts[0] = len(vals)


@cute.jit
def values_protocol_host(out: cute.Tensor, counts: cute.Tensor):
    values_protocol_kernel(out, counts).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_swizzled_tensor_values_protocol_keeps_the_swizzle_offset():
    from cutlass.cute.runtime import from_dlpack
    out, counts = np.zeros(1024, np.int32), np.zeros(1, np.int32)
    cute.compile(values_protocol_host, from_dlpack(out), from_dlpack(counts), options="--target cpu")(
        from_dlpack(out), from_dlpack(counts))
    np.testing.assert_array_equal(out, np.arange(1024))
    assert counts[0] == 2  # the pointer and the dynamic offset inside the swizzle


def _compile_kernel_body(body):
    @cute.kernel
    def k(g: cute.Tensor):
        body(g)

    @cute.jit
    def f(g: cute.Tensor):
        k(g).launch(grid=(1, 1, 1), block=(1, 1, 1))

    from cutlass.cute.runtime import from_dlpack
    g = np.zeros(64, np.float32)
    cute.compile(f, from_dlpack(g), options="--target cpu")


def test_swizzled_pointer_with_a_composed_layout_is_an_error():
    def body(g):
        p = cute.recast_ptr(cute.arch.alloc_smem(cutlass.Float32, 64), cute.make_swizzle(2, 4, 3))
        cute.make_tensor(p, cute.make_composed_layout(cute.make_swizzle(2, 2, 3), 0, cute.make_layout(64)))

    with pytest.raises(cutlass.DSLUserCodeError, match="a swizzled pointer .* takes a plain layout"):
        _compile_kernel_body(body)


def test_swizzle_on_a_global_pointer_is_an_error():
    def body(g):
        cute.recast_ptr(g.iterator, cute.make_swizzle(2, 4, 3))

    with pytest.raises(cutlass.DSLUserCodeError, match="only shared-memory pointers can carry a swizzle"):
        _compile_kernel_body(body)


def test_pointer_align_needs_a_power_of_two():
    def body(g):
        g.iterator.align(12)

    with pytest.raises(cutlass.DSLUserCodeError, match="positive power of two, got 12"):
        _compile_kernel_body(body)


def test_coordinate_tensor_over_a_swizzle_is_an_error():
    def body(g):
        cute.make_tensor((0, 0), cute.make_composed_layout(cute.make_swizzle(2, 2, 3), 0, cute.make_layout((4, 4))))

    with pytest.raises(cutlass.DSLUserCodeError, match="coordinate tensors take a plain layout"):
        _compile_kernel_body(body)


def test_domain_offset_with_underscores_is_an_error():
    def body(g):
        cute.domain_offset((None, 1), cute.make_tensor(g.iterator, cute.make_layout((8, 8))))

    with pytest.raises(cutlass.DSLUserCodeError, match="domain_offset needs a coordinate without"):
        _compile_kernel_body(body)


@cute.kernel
def print_swizzled_kernel():
    ptr = cute.arch.alloc_smem(cutlass.Int32, 64, alignment=256)
    s = cute.make_tensor(ptr, cute.make_composed_layout(cute.make_swizzle(1, 1, 2), 0,
                                                        cute.make_layout((4, 8), stride=(8, 1))))
    flat = cute.make_tensor(ptr, cute.make_layout(32))
    for i in cutlass.range_constexpr(32):
        flat[i] = i
    cute.print_tensor(s)
    cute.print_tensor(s[None, 1])


@cute.jit
def print_swizzled_host():
    print_swizzled_kernel().launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_print_tensor_shows_the_swizzle_and_swizzled_data(capfd):
    from print_format import printed, render
    cute.compile(print_swizzled_host, options="--target cpu")()
    off = np.arange(4)[:, None] * 8 + np.arange(8)[None, :]
    data = swizzle_model(1, 1, 2, off)  # flat[i] = i, so each element shows its swizzled offset
    header = "tensor(raw_ptr(0x<addr>: i32, smem, align<256>) o S<1,1,2> o {} o {}, data="
    expect = render(data, header.format(0, "(4,8):(8,1)")) + render(data[:, 1], header.format(1, "(4):(8)"))
    assert printed(capfd) == expect


@cute.kernel
def rmem_like_kernel(out: cute.Tensor, texts: cutlass.Constexpr):
    x = cute.make_rmem_tensor(cute.make_layout((2, 3)), cutlass.Float32)
    x.fill(1.5)
    ssa = x.load()
    a = cute.make_rmem_tensor_like(ssa)                      # dtype from the TensorSSA
    b = cute.make_rmem_tensor_like(ssa, cutlass.Int32)
    swz = cute.make_composed_layout(cute.make_swizzle(2, 0, 3), 0, cute.make_layout((4, 8), stride=(8, 1)))
    c = cute.make_rmem_tensor_like(swz, cutlass.Float16)     # registers: the outer layout's fragment
    texts.extend([str(a.element_type.__name__), str(b.element_type.__name__), str(c.layout), str(c.element_type.__name__)])
    a.store(ssa)
    b.store(ssa.to(cutlass.Int32))
    out[0] = a[1, 2] + cutlass.Float32(b[0, 1])


@cute.jit
def rmem_like_host(out: cute.Tensor, texts: cutlass.Constexpr):
    rmem_like_kernel(out, texts).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_make_rmem_tensor_like_of_ssa_values_and_composed_layouts():
    from cutlass.cute.runtime import from_dlpack
    out = np.zeros(1, np.float32)
    texts = []
    cute.compile(rmem_like_host, from_dlpack(out), texts, options="--target cpu")(from_dlpack(out))
    assert texts == ["Float32", "Int32", "(4,8):(1,4)", "Float16"]
    assert out[0] == 1.5 + 1.0
    with pytest.raises(TypeError, match="needs a dtype"):
        cute.make_rmem_tensor_like(cute.make_layout(4))


def test_mode_rearrangements_of_composed_layouts_keep_the_swizzle():
    atom = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 8, cute.make_layout((8, 64), stride=(64, 1)))
    staged = cute.tile_to_shape(atom, (16, 64, 2), (0, 1, 2))
    grouped = cute.group_modes(staged, 0, 2)
    assert str(grouped) == "S<3,3,3> o 8 o ((16,64),2):((64,1),1024)"
    assert str(cute.flatten(grouped)) == "S<3,3,3> o 8 o (16,64,2):(64,1,1024)"
    wide = cute.make_composed_layout(cute.make_swizzle(2, 2, 3), 0, cute.make_layout((4, 8), stride=(1, 4)))
    assert str(cute.coalesce(wide)) == "S<2,2,3> o 0 o 32:1"
    for lay in (grouped, cute.coalesce(wide)):  # same function as before the rearrangement
        src = staged if lay is grouped else wide
        for i in range(0, cute.size(src), 7):
            assert lay(i) == src(i)


# ---- the GEMM prologue's irregular-k shift: domain_offset by a negative, run-time residue --------

@cute.kernel
def residue_kernel(mA: cute.Tensor, out: cute.Tensor, coords: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    gA = cute.local_tile(mA, (16, 16), (0, None))          # (16, 16, k_tiles)
    residual_k = cute.size(mA, mode=[1]) - cutlass.Int32(16) * cute.size(gA, mode=[2])
    gA = cute.domain_offset((0, residual_k, 0), gA)
    gA = cute.make_tensor(gA.iterator.align(16), gA.layout)  # still 16-byte aligned: a no-op
    cA = cute.domain_offset((0, residual_k, 0), cute.local_tile(cute.make_identity_tensor(mA.shape), (16, 16),
                                                                 (0, None)))
    m, k = tidx % 16, tidx // 16
    for t in cutlass.range_constexpr(3):
        out[m, k + 16 * t] = cutlass.Float16(-1)
        if t > 0 or k >= 8:  # columns before the tensor start are not read
            out[m, k + 16 * t] = gA[m, k, t]
        c = cA[m, k, t]
        coords[m, k + 16 * t] = c[1]


@cute.jit
def residue_host(mA: cute.Tensor, out: cute.Tensor, coords: cute.Tensor):
    residue_kernel(mA, out, coords).launch(grid=(1, 1, 1), block=(256, 1, 1))


def test_domain_offset_by_a_negative_residue_then_align():
    from cutlass.cute.runtime import from_dlpack
    a = np.arange(16 * 40, dtype=np.float16).reshape(16, 40)  # K = 40: three 16-wide tiles, residue -8
    out, coords = np.zeros((16, 48), np.float16), np.zeros((16, 48), np.int32)
    args = (from_dlpack(a, assumed_align=16).mark_layout_dynamic(), from_dlpack(out), from_dlpack(coords))
    cute.compile(residue_host, *args, options="--target cpu")(*args)
    expect = np.concatenate([np.full((16, 8), -1, np.float16), a], axis=1)  # tile 0 starts 8 columns early
    np.testing.assert_array_equal(out, expect)
    np.testing.assert_array_equal(coords, np.tile(np.arange(48) - 8, (16, 1)))
