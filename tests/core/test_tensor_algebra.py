"""Tensors while tracing (cute.make_tensor, slicing, divides, local_tile/local_partition,
fragments, tiled copies, cute.copy) on the CPU: layouts against hand-computed ones, element
values against numpy, kernels on the emulator, and the error messages."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack


@pytest.fixture(autouse=True)
def _emulator(monkeypatch):
    """numpy arrays live in host memory: kernels here run on the emulator, GPU or not."""
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")


def grid(m, n, dtype=np.float32):
    return np.arange(m * n, dtype=dtype).reshape(m, n)


# ---- printing ---------------------------------------------------------------------------------

def test_tensor_print_forms(capsys):
    @cute.jit
    def show(a: cute.Tensor):
        print(a)
        print(a.type)
        print(cute.make_identity_tensor((8, 4)))
        print(cute.make_identity_tensor((8, 4)).type)
        print(cute.make_rmem_tensor((4, 2), cutlass.Float16).type)

    show(from_dlpack(grid(4, 3), assumed_align=16))
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "tensor<ptr<f32, generic, align<16>> o (4,3):(3,1)>",
        '!cute.memref<f32, generic, align<16>, "(4,3):(3,1)">',
        "tensor<(0,0) o (8,4):(1@0,1@1)>",
        '!cute.coord_tensor<"(0,0)", "(8,4):(1@0,1@1)">',
        '!cute.memref<f16, rmem, align<32>, "(4,2):(1,4)">',
    ]


def test_boolean_tensors_print_as_i8(capsys):
    # The CuTe DSL stores Boolean tensors as bytes (its elementwise_apply example prints
    # frgPred = !cute.memref<i8, rmem, align<32>, "((4,16)):((1,4))">).
    @cute.jit
    def show():
        pred = cute.make_rmem_tensor(((4, 16),), cutlass.Boolean)
        print(pred.type)
        print(pred)

    show()
    assert capsys.readouterr().out.splitlines() == [
        '!cute.memref<i8, rmem, align<32>, "((4,16)):((1,4))">',
        "tensor<ptr<i8, rmem, align<32>> o ((4,16)):((1,4))>",
    ]


def test_traced_tensor_class_and_isinstance():
    seen = {}

    @cute.jit
    def probe(a: cute.Tensor):
        seen["cls"] = type(a)
        seen["is_tensor"] = isinstance(a, cute.Tensor)
        seen["memspace"] = str(a.memspace)
        seen["dtype"] = a.element_type

    probe(from_dlpack(grid(2, 2)))
    assert seen["cls"].__module__ == "cutlass.cute.core" and seen["cls"].__name__ == "_Tensor"
    assert seen["is_tensor"] and seen["memspace"] == "generic" and seen["dtype"] is cutlass.Float32


# ---- slicing, divides, partitions (values checked against numpy) --------------------------------

def test_zipped_divide_and_slice_values():
    x = grid(4, 8)

    @cute.jit
    def pick(a: cute.Tensor):
        t = cute.zipped_divide(a, (2, 4))
        # ((2,4),(2,2)):((8,1),(16,4)) by hand: a 2x4 tile of a row-major 4x8, tiles 16 / 4 apart.
        assert str(t.layout) == "((2,4),(2,2)):((8,1),(16,4))"
        s = t[((None, None), 1)]          # tile 1 in colexicographic order: tile row 1, tile col 0
        assert str(s.layout) == "(2,4):(8,1)"
        return s[1, 2], t[((0, 3), 3)]

    r = pick(from_dlpack(x))
    assert [float(v) for v in r] == [x[2 + 1, 2], x[2, 4 + 3]]


def test_assigning_a_tensor_ssa_to_a_slice_stores_it():
    x = grid(4, 8)

    @cute.jit
    def double_column(a: cute.Tensor):
        a[None, 5] = a[None, 2].load() * 2.0      # column 5 <- 2 * column 2
        t = cute.zipped_divide(a, (1, 4))
        t[(None, (3, 0))] = t[(None, (0, 1))].load() + 1.0   # row 3, cols 0..3 <- row 0, cols 4..7, + 1

    expected = x.copy()
    expected[:, 5] = 2 * x[:, 2]
    expected[3, 0:4] = expected[0, 4:8] + 1   # after the first store
    double_column(from_dlpack(x))
    np.testing.assert_array_equal(x, expected)


def test_assigning_to_a_slice_needs_a_tensor_ssa_of_its_size():
    @cute.jit
    def scalar_to_slice(a: cute.Tensor):
        a[None, 1] = 1.0

    with pytest.raises(TypeError, match="assigning to a slice of a tensor needs a TensorSSA value, got float") as e:
        scalar_to_slice(from_dlpack(grid(4, 8)))
    assert isinstance(e.value, cute.DSLUserCodeError) and e.value.filename == __file__

    @cute.jit
    def row_to_column(a: cute.Tensor):
        a[None, 1] = a[0, None].load()

    with pytest.raises(ValueError, match="store\\(\\) of 8 values into a tensor of 4 elements") as e:
        row_to_column(from_dlpack(grid(4, 8)))
    assert isinstance(e.value, cute.DSLUserCodeError) and e.value.filename == __file__


def test_coordinate_tensor_slices():
    seen = {}

    @cute.jit
    def coords(a: cute.Tensor):
        c = cute.zipped_divide(cute.make_identity_tensor(a.shape), (2, 4))
        seen["tile"] = str(c[((None, None), 3)])
        seen["elem"] = c[((1, 2), 1)]

    coords(from_dlpack(grid(4, 8)))
    assert seen["tile"] == "tensor<(2,4) o (2,4):(1@0,1@1)>"
    assert seen["elem"] == (3, 2)


def test_local_tile_and_local_partition():
    x = grid(8, 16)

    @cute.jit
    def parts(a: cute.Tensor):
        t = cute.local_tile(a, (4, 8), (1, 1))              # rows 4..7, cols 8..15
        assert str(t.layout) == "(4,8):(16,1)"
        p = cute.local_partition(a, cute.make_layout((2, 4), stride=(4, 1)), 5)
        # thread 5 of (2,4):(4,1) sits at (1,1): rows 1::2, cols 1::4
        assert str(p.layout) == "(4,4):(32,4)"
        return t[2, 3], p[1, 2], p[3, 3]

    r = parts(from_dlpack(x))
    assert [float(v) for v in r] == [x[6, 11], x[3, 9], x[7, 13]]


def test_local_tile_coordinate_longer_than_the_projection():
    # NVIDIA's Hopper GEMMs: an (M,K,L) tensor tiled by an (M,N,K) tiler at (m, n, None, l) with
    # proj (1, None, 1) is the (bM, bK, RestK) tiles of row block m in batch l.
    x = np.arange(8 * 12 * 2, dtype=np.float32).reshape(2, 8, 12).transpose(1, 2, 0)  # (M,K,L) = (8,12,2)

    @cute.jit
    def tiles(a: cute.Tensor):
        t = cute.local_tile(a, (4, 2, 3), (1, 0, None, 1), proj=(1, None, 1))
        assert str(t.layout) == "(4,3,4):(12,1,3)"
        return t[2, 1, 3], t[0, 0, 0]

    r = tiles(from_dlpack(x))
    # block row 1 (rows 4..7), k tile 3 (cols 9..11), batch 1
    assert [float(v) for v in r] == [x[6, 10, 1], x[4, 0, 1]]


def test_fragment_like_layouts():
    seen = {}

    @cute.jit
    def frags(a: cute.Tensor):
        tiled = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), a.element_type),
                                        cute.make_ordered_layout((4, 32), order=(1, 0)),
                                        cute.make_ordered_layout((4, 4), order=(1, 0)))
        thr = tiled.get_slice(33).partition_S(cute.zipped_divide(a, (16, 128))[((None, None), 0)])
        seen["thr"] = str(thr.layout)
        seen["frag"] = str(cute.make_fragment_like(thr).layout)
        seen["frag_type"] = cute.make_fragment_like(thr, cutlass.Float16).type
        seen["tiler"] = tiled.tiler_mn

    frags(from_dlpack(grid(16, 128)))
    # thread 33 of the row-major (4,32) thread layout owns a 4x4 block; values in the atom's
    # (1 value) x (4 columns stride 1, 4 rows stride 128) order.
    assert seen["thr"] == "((1,(4,4)),1,1):((0,(1,128)),0,0)"
    assert seen["frag"] == "((1,(4,4)),1,1):((0,(1,4)),0,0)"
    assert seen["frag_type"] == '!cute.memref<f16, rmem, align<32>, "((1,(4,4)),1,1):((0,(1,4)),0,0)">'
    assert [str(mode) for mode in seen["tiler"]] == ["16:1", "128:1"]  # one layout per mode, as CuTe's Tiler_MN


# ---- kernels on the emulator --------------------------------------------------------------------

@cute.kernel
def _owner_kernel(gO: cute.Tensor, tv: cute.Layout, tiler: cute.Shape):
    tidx, _, _ = cute.arch.thread_idx()
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), gO.element_type)
    mine = cute.make_tiled_copy(atom, tv, tiler).get_slice(tidx).partition_D(gO)
    for i in cutlass.range_constexpr(cute.size(mine)):
        mine[i] = tidx


@cute.jit
def _owners(o: cute.Tensor):
    tiler, tv = cute.make_layout_tv(cute.make_ordered_layout((4, 32), order=(1, 0)),
                                    cute.make_ordered_layout((4, 4), order=(1, 0)))
    _owner_kernel(o, tv, tiler).launch(grid=[1, 1, 1], block=[128, 1, 1])


def test_tiled_copy_partition_owners_on_emulator():
    out = np.full((16, 128), -1, dtype=np.int32)
    _owners(from_dlpack(out))
    r, c = np.meshgrid(np.arange(16), np.arange(128), indexing="ij")
    np.testing.assert_array_equal(out, (r // 4) * 32 + c // 4)


@cute.kernel
def _add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, cC: cute.Tensor, shape: cute.Shape,
                thr_layout: cute.Layout, val_layout: cute.Layout, bits: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    tile = ((None, None), bidx)
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), gA.element_type, num_bits_per_copy=bits)
    thr = cute.make_tiled_copy_tv(atom, thr_layout, val_layout).get_slice(tidx)
    thrA, thrB, thrC = thr.partition_S(gA[tile]), thr.partition_S(gB[tile]), thr.partition_D(gC[tile])
    frgA, frgB, frgC = cute.make_fragment_like(thrA), cute.make_fragment_like(thrB), cute.make_fragment_like(thrC)
    thrCrd = thr.partition_S(cC[tile])
    pred = cute.make_rmem_tensor(cute.size(thrCrd) // (bits // gA.element_type.width), cutlass.Boolean)
    for i in cutlass.range_constexpr(cute.size(pred)):
        pred[i] = cute.elem_less(thrCrd[i * (bits // gA.element_type.width)], shape)
    cute.copy(atom, thrA, frgA, pred=pred)
    cute.copy(atom, thrB, frgB, pred=pred)
    for i in cutlass.range_constexpr(cute.size(frgC)):
        frgC[i] = frgA[i] + frgB[i]
    cute.copy(atom, frgC, thrC, pred=pred)


@cute.jit
def _add(mA, mB, mC, bits: cutlass.Constexpr):
    thr_layout = cute.make_ordered_layout((4, 32), order=(1, 0))
    val_layout = cute.make_ordered_layout((4, 4), order=(1, 0))
    tiler_mn, tv_layout = cute.make_layout_tv(thr_layout, val_layout)
    gA, gB, gC = [cute.zipped_divide(m, tiler_mn) for m in (mA, mB, mC)]
    cC = cute.zipped_divide(cute.make_identity_tensor(mC.shape), tiler=tiler_mn)
    _add_kernel(gA, gB, gC, cC, mC.shape, thr_layout, val_layout, bits).launch(
        grid=[cute.size(gC, mode=[1]), 1, 1], block=[cute.size(tv_layout, mode=[0]), 1, 1])


@pytest.mark.parametrize("shape", [(3, 12), (16, 128), (37, 260)])
@pytest.mark.parametrize("dtype,bits", [(np.float32, 32), (np.float32, 128), (np.int32, 64), (np.float16, 64)])
def test_predicated_tiled_copy_add_on_emulator(shape, dtype, bits):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(shape) * 10).astype(dtype)
    b = (rng.standard_normal(shape) * 10).astype(dtype)
    c = np.zeros_like(a)
    ta, tb, tc = (from_dlpack(x, assumed_align=16).mark_layout_dynamic() for x in (a, b, c))
    _add(ta, tb, tc, bits)
    np.testing.assert_array_equal(c, a + b)


def test_vector_accesses_follow_alignment():
    a = grid(64, 128)

    def loads(assumed_align):
        t = from_dlpack(a, assumed_align=assumed_align)
        ir = cute.compile(_add, t, t, t, 32, options="--target cpu").__mlir__
        return [line for line in ir.splitlines() if " = load " in line]

    # With a 16-byte aligned base and static strides, the unpredicated... here predicated per
    # element (32-bit atom): only scalar accesses; a 128-bit atom gives vector<4xf32> ones.
    assert all("vector" not in line for line in loads(16))
    t = from_dlpack(a, assumed_align=16)
    ir = cute.compile(_add, t, t, t, 128, options="--target cpu").__mlir__
    assert any("-> vector<4xf32>" in line for line in ir.splitlines())


def test_load_of_fragment_is_vectorised_when_aligned():
    seen = {}

    @cute.jit
    def vec(a: cute.Tensor):
        s = cute.zipped_divide(a, (1, 8))[((0, None), (2, 1))]
        f = cute.make_rmem_tensor((8,), a.element_type)
        for i in cutlass.range_constexpr(8):
            f[i] = s[i]
        seen["slice"] = s.type
        return s[7]

    x = grid(4, 64)
    r = vec(from_dlpack(x, assumed_align=16))
    assert float(r) == x[2, 8 + 7]
    assert seen["slice"] == '!cute.memref<f32, generic, align<16>, "(8):(1)">'


# ---- errors ---------------------------------------------------------------------------------------

def test_copy_errors_name_the_tensors():
    @cute.jit
    def bad_rank(a: cute.Tensor):
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), a.element_type)
        cute.copy(atom, a, a[(None, 0)])

    with pytest.raises(ValueError, match="ranks differ"):
        bad_rank(from_dlpack(grid(4, 4)))

    @cute.jit
    def bad_width(a: cute.Tensor):
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), a.element_type)
        cute.copy(atom, a, cute.make_rmem_tensor((4, 4), cutlass.Float16))

    with pytest.raises(TypeError, match="different widths"):
        bad_width(from_dlpack(grid(4, 4)))

    @cute.jit
    def bad_atom(a: cute.Tensor):
        cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), a.element_type, num_bits_per_copy=48)

    with pytest.raises(ValueError, match="not a multiple of the element width 32"):
        bad_atom(from_dlpack(grid(4, 4)))

    @cute.jit
    def bad_pred(a: cute.Tensor):
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), a.element_type)
        f = cute.make_rmem_tensor((4, 4), a.element_type)
        cute.copy(atom, a, f, pred=cute.make_rmem_tensor((3,), cutlass.Boolean))

    with pytest.raises(ValueError, match="one entry per atom call"):
        bad_pred(from_dlpack(grid(4, 4)))


def test_tensor_errors_have_the_users_line():
    @cute.jit
    def load_coords(a: cute.Tensor):
        cute.make_identity_tensor((2, 2)).fill(0)

    with pytest.raises(cute.DSLUserCodeError, match="coordinate tensor") as e:
        load_coords(from_dlpack(grid(2, 2)))
    assert e.value.filename == __file__

    @cute.jit
    def dynamic_fragment(a: cute.Tensor):
        cute.make_rmem_tensor(a.shape, a.element_type)

    with pytest.raises(cute.DSLUserCodeError, match="static layout"):
        dynamic_fragment(from_dlpack(grid(2, 2)).mark_layout_dynamic())


# ---- lists of tensors as arguments --------------------------------------------------------------

@cute.kernel
def _sum_kernel(ins: list, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    acc = ins[0][tidx]
    for t in ins[1:]:
        acc = acc + t[tidx]
    out[tidx] = acc


@cute.jit
def _sum(ins, out: cute.Tensor):
    _sum_kernel(ins, out).launch(grid=[1, 1, 1], block=[cute.size(out), 1, 1])


def test_list_of_tensors_argument():
    xs = [np.arange(8, dtype=np.float32) * (k + 1) for k in range(3)]
    out = np.zeros(8, np.float32)
    compiled = cute.compile(_sum, [from_dlpack(x) for x in xs], from_dlpack(out))
    compiled([from_dlpack(x) for x in xs], from_dlpack(out))
    np.testing.assert_array_equal(out, xs[0] + xs[1] + xs[2])
    with pytest.raises(cute.DSLUserCodeError, match="compiled as a list of 3 items"):
        compiled([from_dlpack(x) for x in xs[:2]], from_dlpack(out))


# ---- PTX from the CPU machine -----------------------------------------------------------------------

@cute.kernel
def _half_rows_kernel(a: cute.Tensor, c: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    row = cute.zipped_divide(a, (1, 8))[((0, None), (tidx, 0))]
    out = cute.zipped_divide(c, (1, 8))[((0, None), (tidx, 0))]
    out.store(row.load() + row.load())


@cute.jit
def _half_rows(a: cute.Tensor, c: cute.Tensor):
    _half_rows_kernel(a, c).launch(grid=[1, 1, 1], block=[4, 1, 1])


def test_f16_stores_through_dynamic_strides_reach_ptx(monkeypatch):
    """Eight f16 stores whose first one is 16-byte aligned: libNVVM used to refuse the merged
    access it formed from them; the lowering now states at most 8 bytes on 2-byte scalars."""
    monkeypatch.delenv("CUTE_DSL_TARGET")
    a = np.zeros((4, 8), np.float16)
    ta = from_dlpack(a, assumed_align=16)
    tc = from_dlpack(np.zeros((4, 8), np.float16), assumed_align=16).mark_layout_dynamic()
    ptx = cute.compile(_half_rows, ta, tc, options="--target gpu").__ptx__
    assert "ld.global.v4" in ptx or "ld.v4" in ptx


# ---- bounds checks with --enable-assertions ---------------------------------------------------------

@cute.kernel
def _peek_kernel(a: cute.Tensor, out: cute.Tensor, row: cutlass.Int32):
    top = cute.local_tile(a, (4, 4), (0, 0))  # a 4x4 view of the 8x4 buffer
    out[0] = top[row, 1]


@cute.jit
def _peek(a: cute.Tensor, out: cute.Tensor, row: cutlass.Int32):
    _peek_kernel(a, out, row).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_tensor_indexing_is_checked_with_assertions():
    a = grid(8, 4)
    out = np.zeros(1, np.float32)
    ta, to = from_dlpack(a), from_dlpack(out)
    checked = cute.compile(_peek, ta, to, 0, options="--enable-assertions --target cpu")
    checked(ta, to, 3)
    assert out[0] == a[3, 1]
    with pytest.raises(cute.DSLRuntimeError, match=r"index \(\?,1\) out of bounds") as e:
        checked(ta, to, 5)
    assert "test_tensor_algebra.py" in str(e.value)
    # Without the option the view is not checked (row 5 is still inside the buffer).
    unchecked = cute.compile(_peek, ta, to, 0, options="--target cpu")
    unchecked(ta, to, 5)
    assert out[0] == a[5, 1]
    assert "assert" not in unchecked.__mlir__ and "assert" in checked.__mlir__


# ---- nested tuple arguments, make_cotiled_copy ---------------------------------------------------

@cute.jit
def _weigh_shape(problem, out: cute.Tensor):
    # fmha_bwd.py's problem shape (s_q, s_k, d, ((h_r, h_k), b)): one run-time Int32 per leaf.
    s_q, s_k, d, ((h_r, h_k), b) = problem
    out[0] = s_q + 10 * s_k + 100 * d + 1000 * h_r + 10000 * h_k + 100000 * b


def test_nested_tuple_of_scalars_argument():
    out = np.zeros(1, np.int32)
    compiled = cute.compile(_weigh_shape, (1, 2, 3, ((4, 5), 6)), out)
    compiled((1, 2, 3, ((4, 5), 6)), out)
    assert out[0] == 654321
    compiled((9, 8, 7, ((6, 5), 4)), out)  # the leaves are run-time values
    assert out[0] == 456789
    with pytest.raises(cute.DSLUserCodeError, match="compiled as a list of 6 items"):
        compiled((1, 2, 3, (4, 5)), out)


@cute.kernel
def _cotiled_kernel(out: cute.Tensor):
    # Registers laid out ((8, 2), 2):((1, 16), 8): eight consecutive registers hold coordinates
    # (0..7, b, c). A 128-bit atom cotiled with that layout moves them as one vector each.
    regs = cute.make_rmem_tensor(cute.make_layout(((8, 2), 2), stride=((1, 16), 8)), cutlass.Float16)
    for i in cutlass.range_constexpr(32):
        regs[i] = cutlass.Float16(i)
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=128)
    tiled = cute.make_cotiled_copy(atom, cute.make_layout((1, 8)), regs.layout)
    thr = tiled.get_slice(0)
    dst = cute.make_tensor(out.iterator, cute.make_layout(((8, 2), 2)))
    src, dst = thr.partition_S(regs), thr.partition_D(dst)
    assert cute.size(src, mode=[0]) == 8 and cute.size(src) == 32
    cute.copy(atom, src, dst)


@cute.jit
def _cotiled(out: cute.Tensor):
    _cotiled_kernel(out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_cotiled_copy_moves_the_register_layouts_vectors():
    out = np.zeros(32, np.float16)
    t = from_dlpack(out, assumed_align=16)
    compiled = cute.compile(_cotiled, t, options="--target cpu")
    compiled(t)
    np.testing.assert_array_equal(out, np.arange(32, dtype=np.float16))  # coordinate i holds i
    assert sum("store" in line and "vector<8xf16>" in line for line in compiled.__mlir__.splitlines()) == 4


def test_cotiled_copy_refuses_an_atom_outside_the_data():
    @cute.jit
    def f():
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=128)
        # Every other address: no eight consecutive ones for the 128-bit atom.
        cute.make_cotiled_copy(atom, cute.make_layout((1, 8)), cute.make_layout(8, stride=2))

    with pytest.raises(Exception, match="make_cotiled_copy: the memory the atom's layout"):
        cute.compile(f, options="--target cpu")


def test_autovec_copy_takes_an_l1_eviction_hint():
    # NVIDIA's MLA decode stores its output with l1c_evict_priority=NO_ALLOCATE: a cache hint.
    @cute.jit
    def copy_with_hint(src: cute.Tensor, dst: cute.Tensor, hint: cutlass.Constexpr):
        cute.autovec_copy(src, dst, l1c_evict_priority=hint)

    src, dst = grid(4, 8), np.zeros((4, 8), np.float32)
    s, d = from_dlpack(src, assumed_align=16), from_dlpack(dst, assumed_align=16)  # static layouts
    hint = cute.nvgpu.CacheEvictionPriority.NO_ALLOCATE
    cute.compile(copy_with_hint, s, d, hint, options="--target cpu")(s, d)
    np.testing.assert_array_equal(dst, src)
    with pytest.raises(TypeError, match="l1c_evict_priority must be a cute.nvgpu.CacheEvictionPriority"):
        cute.compile(copy_with_hint, s, d, "no_allocate", options="--target cpu")
