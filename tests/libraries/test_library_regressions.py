"""Defects that running quack's kernels (issue 23) exposed, each as a small kernel of the same
construct, checked against numpy on the CPU emulator."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Int32, const_expr


# ---- a @cute.jit function that calls itself (quack's bitonic_sort) ---------------------------------

@cute.jit
def reverse_range(t: cute.Tensor, lo: cutlass.Constexpr, hi: cutlass.Constexpr):
    """Reverses t[lo:hi] by swapping the ends and recursing on the middle."""
    if const_expr(hi - lo > 1):
        x = t[lo]
        t[lo] = t[hi - 1]
        t[hi - 1] = x
        reverse_range(t, lo + 1, hi - 1)


@cute.kernel
def reverse_kernel(a: cute.Tensor):
    reverse_range(a, 0, 7)


@cute.jit
def reverse_host(a: cute.Tensor):
    reverse_kernel(a).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_recursive_jit_function_calls_itself():
    a = np.arange(8, dtype=np.int32)
    cute.compile(reverse_host, a, options="--target cpu")(a)
    np.testing.assert_array_equal(a, [6, 5, 4, 3, 2, 1, 0, 7])


# ---- a name bound to None, used only under const_expr, inside a dynamic loop (quack's RMSNorm
# backward keeps optional fragments as None) ------------------------------------------------------

@cute.kernel
def optional_fragment_kernel(a: cute.Tensor, out: cute.Tensor, n: Int32, with_sum: cutlass.Constexpr):
    acc = None
    if const_expr(with_sum):
        acc = cute.make_fragment(1, cutlass.Float32)
        acc.fill(0.0)
    for i in cutlass.range(n):
        out[i] = a[i] * 2
        if const_expr(acc is not None):
            acc.fill(acc[0] + a[i])
    if const_expr(acc is not None):
        out[n] = acc[0]


@cute.jit
def optional_fragment_host(a: cute.Tensor, out: cute.Tensor, n: Int32, with_sum: cutlass.Constexpr):
    optional_fragment_kernel(a, out, n, with_sum).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_none_value_passes_through_dynamic_loop():
    for with_sum in (False, True):
        a = np.arange(8, dtype=np.float32)
        out = np.zeros(9, np.float32)
        cute.compile(optional_fragment_host, a, out, Int32(8), with_sum, options="--target cpu")(a, out, Int32(8))
        np.testing.assert_array_equal(out[:8], a * 2)
        assert out[8] == (a.sum() if with_sum else 0)


# ---- cute.compile of an object whose @cute.jit __call__ is inherited (quack's GemmDefaultSm90) -------

@cute.kernel
def scale_kernel(a: cute.Tensor, factor: cutlass.Constexpr):
    i = cute.arch.thread_idx()[0]
    a[i] = a[i] * factor


class ScaleBase:
    def __init__(self, factor):
        self.factor = factor

    @cute.jit
    def __call__(self, a: cute.Tensor):
        scale_kernel(a, self.factor).launch(grid=(1, 1, 1), block=(8, 1, 1))


class ScaleByThree(ScaleBase):
    def __init__(self):
        super().__init__(3)


def test_compile_object_with_inherited_jit_call():
    a = np.arange(8, dtype=np.float32)
    cute.compile(ScaleByThree(), a, options="--target cpu")(a)
    np.testing.assert_array_equal(a, np.arange(8, dtype=np.float32) * 3)


# ---- DSL numbers inside an argument class (quack's ArgumentsBase: a JitArgument dataclass whose
# fields forward __get_mlir_types__ / __c_pointers__ and are rebuilt with new_from_mlir_values) -------

from dataclasses import dataclass, fields  # noqa: E402

from cutlass.base_dsl.typing import JitArgument  # noqa: E402


@dataclass
class Scalars(JitArgument):
    offset: Int32
    scale: cutlass.Float32

    def __c_pointers__(self):
        return [p for f in fields(self) for p in getattr(self, f.name).__c_pointers__()]

    def __get_mlir_types__(self):
        return [t for f in fields(self) for t in getattr(self, f.name).__get_mlir_types__()]

    def __new_from_mlir_values__(self, values):
        return Scalars(*(cutlass.new_from_mlir_values(getattr(self, f.name), [v])
                         for f, v in zip(fields(self), values)))


@cute.kernel
def affine_kernel(a: cute.Tensor, s: Scalars):
    i = cute.arch.thread_idx()[0]
    a[i] = a[i] * s.scale + cutlass.Float32(s.offset)


@cute.jit
def affine_host(a: cute.Tensor, s: Scalars):
    affine_kernel(a, s).launch(grid=(1, 1, 1), block=(8, 1, 1))


def test_numbers_in_a_jit_argument_class_are_runtime_values():
    a = np.arange(8, dtype=np.float32)
    f = cute.compile(affine_host, a, Scalars(Int32(1), cutlass.Float32(2.0)), options="--target cpu")
    f(a, Scalars(Int32(5), cutlass.Float32(0.5)))  # other values than at compile time
    np.testing.assert_array_equal(a, np.arange(8, dtype=np.float32) * 0.5 + 5)


# ---- make_tiled_tma_atom with CuTe's cta_v_map (composition of an identity layout with the tile)
# and a batch mode (quack's epilogue store) ---------------------------------------------------------

from cutlass.cute.nvgpu import cpasync  # noqa: E402


@cute.kernel
def tma_store_kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor):
    bidx, bidy, bidz = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    s = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float32, 256, alignment=128),
                         cute.make_layout((8, 32), stride=(32, 1)))
    for i in cutlass.range(tidx, 256, 32):
        s[i // 32, i % 32] = cutlass.Float32(bidz * 100000 + (bidx * 8 + i // 32) * 1000 + bidy * 32 + i % 32)
    cute.arch.fence_proxy(cute.arch.ProxyKind.async_shared, space=cute.arch.SharedSpace.shared_cta)
    cute.arch.sync_threads()
    cute.copy(atom, s, cute.local_tile(tma_tensor[None, None, bidz], (8, 32), (bidx, bidy)))
    cute.arch.cp_async_bulk_commit_group()
    cute.arch.cp_async_bulk_wait_group(0, read=True)


@cute.jit
def tma_store_host(c: cute.Tensor):
    cta_v_map = cute.composition(cute.make_identity_layout(c.shape), (8, 32))
    atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c,
                                          cute.make_layout((8, 32), stride=(32, 1)), cta_v_map)
    tma_store_kernel(atom, t).launch(grid=(2, 2, 2), block=(32, 1, 1))


def test_tma_atom_from_a_cta_v_map_layout_with_a_batch_mode():
    c = np.full((2, 16, 64), -1, np.float32).transpose(1, 2, 0)  # (m, n, l), n contiguous
    cute.compile(tma_store_host, c, options="--target cpu --gpu-arch sm_90a")(c)
    m, n, batch = np.meshgrid(np.arange(16), np.arange(64), np.arange(2), indexing="ij")
    np.testing.assert_array_equal(c, (batch * 100000 + m * 1000 + n).astype(np.float32))


# ---- integer division by a constant zero in a kernel is left to run time (quack's pingpong GEMM
# advances a 0-stage pipeline state it never uses) ---------------------------------------------------

@cute.kernel
def unused_division_kernel(out: cute.Tensor, stages: cutlass.Constexpr):
    i = cute.arch.thread_idx()[0]
    index = Int32(3) + Int32(2)
    if const_expr(stages > 0):
        out[i] = index // stages
    else:
        wrapped = index // Int32(stages)  # never read: CUDA leaves the value unspecified
        out[i] = index


@cute.jit
def unused_division_host(out: cute.Tensor, stages: cutlass.Constexpr):
    unused_division_kernel(out, stages).launch(grid=(1, 1, 1), block=(4, 1, 1))


def test_constant_integer_division_by_zero_in_a_kernel_is_not_a_trace_error():
    out = np.zeros(4, np.int32)
    cute.compile(unused_division_host, out, 0, options="--target cpu")(out)
    np.testing.assert_array_equal(out, [5] * 4)
    cute.compile(unused_division_host, out, 2, options="--target cpu")(out)
    np.testing.assert_array_equal(out, [2] * 4)


# ---- FlashAttention-4's helpers: tiled_mma.op, nvvm.fmax with three operands, ptr.toint(loc=, ip=),
# llvm.inline_asm without a result, ptr.max_alignment ------------------------------------------

from cutlass.cute.nvgpu import warpgroup  # noqa: E402
from cutlass._mlir.dialects import llvm, nvvm  # noqa: E402
from cutlass.cutlass_dsl import T  # noqa: E402


def test_tiled_mma_op_makes_fresh_atoms():
    @cute.jit
    def host():
        tiled = cute.make_tiled_mma(warpgroup.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, 64, 16)))
        first = cute.make_mma_atom(tiled.op)
        first.set(warpgroup.Field.ACCUMULATE, False)
        second = cute.make_mma_atom(tiled.op)
        second.set(warpgroup.Field.ACCUMULATE, True)
        assert tuple(first.shape_mnk) == (64, 64, 16) and str(first) == str(second)
        # Each atom keeps its own ACCUMULATE field.
        assert bool(first.get(warpgroup.Field.ACCUMULATE)) is False
        assert bool(second.get(warpgroup.Field.ACCUMULATE)) is True

    cute.compile(host, options="--target cpu")


@cute.kernel
def fmax3_kernel(a: cute.Tensor, out: cute.Tensor):
    i = cute.arch.thread_idx()[0]
    out[i] = cutlass.Float32(nvvm.fmax(T.f32(), a[3 * i].ir_value(), a[3 * i + 1].ir_value(),
                                       c=a[3 * i + 2].ir_value()))
    out[i + 4] = cutlass.Float32(nvvm.fmin(T.f32(), a[3 * i].ir_value(), a[3 * i + 1].ir_value(),
                                           c=a[3 * i + 2].ir_value()))


@cute.jit
def fmax3_host(a: cute.Tensor, out: cute.Tensor):
    fmax3_kernel(a, out).launch(grid=(1, 1, 1), block=(4, 1, 1))


def test_nvvm_fmax_fmin_three_operands():
    a = np.array([1, 5, 3, -1, -7, -2, 0, 0.5, np.nan, 2, 9, 4], np.float32)
    out = np.zeros(8, np.float32)
    cute.compile(fmax3_host, a, out, options="--target cpu")(a, out)
    triples = a.reshape(4, 3)
    np.testing.assert_array_equal(out[:4], np.fmax.reduce(triples, axis=1))  # a NaN operand is ignored
    np.testing.assert_array_equal(out[4:], np.fmin.reduce(triples, axis=1))


@cute.kernel
def void_asm_kernel(a: cute.Tensor):
    address = a.iterator.toint(loc=None, ip=None)
    llvm.inline_asm(None, [address.ir_value()], "prefetch.global.L2 [$0];", "l", has_side_effects=True,
                    is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT)


@cute.jit
def void_asm_host(a: cute.Tensor):
    void_asm_kernel(a).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_inline_asm_without_result_traces():
    a = np.zeros(4, np.float32)
    f = cute.compile(void_asm_host, a, options="--target cpu")  # tracing takes res=None
    with pytest.raises(cutlass.DSLRuntimeError, match="uses inline PTX"):
        f(a)


@cute.kernel
def row_pointers_kernel(a: cute.Tensor, out: cute.Tensor):
    i = cute.arch.thread_idx()[0]
    # FA4's coord_offset_i64: a pointer re-made at a 64-bit offset, assuming the original's alignment.
    offset = cutlass.Int64(i) * cute.size(a.stride[0]) * (a.element_type.width // 8)
    ptr = cute.make_ptr(a.element_type, a.iterator.toint() + offset, a.memspace,
                        assumed_align=a.iterator.max_alignment)
    row = cute.make_tensor(ptr, cute.make_layout(4))
    out[i] = row[0] + row[3]
    out[4] = cutlass.Float32(a.iterator.max_alignment)


@cute.jit
def row_pointers_host(a: cute.Tensor, out: cute.Tensor):
    row_pointers_kernel(a, out).launch(grid=(1, 1, 1), block=(4, 1, 1))


def test_pointer_max_alignment_is_its_known_alignment():
    from cutlass.cute.runtime import from_dlpack
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = np.zeros(5, np.float32)
    args = from_dlpack(a, assumed_align=16), from_dlpack(out)
    cute.compile(row_pointers_host, *args, options="--target cpu")(*args)
    np.testing.assert_array_equal(out, [*(a[:, 0] + a[:, 3]), 16])


# ---- the pipeline classes as libraries derive from them (quack's PipelineTmaCpAsync: a frozen
# dataclass over PipelineTmaAsync, built positionally from _make_sync_object's barriers) -----------

import dataclasses  # noqa: E402

import cutlass.pipeline as pipeline  # noqa: E402


def test_pipeline_classes_are_frozen_dataclasses_with_the_dsl_fields():
    @dataclasses.dataclass(frozen=True)
    class Derived(pipeline.PipelineTmaAsync):
        pass

    assert [f.name for f in dataclasses.fields(Derived)] == [
        "sync_object_full", "sync_object_empty", "num_stages", "producer_mask", "consumer_mask",
        "is_signalling_thread"]
    assert callable(pipeline.PipelineAsync._make_sync_object)
    assert {op.name for op in pipeline.PipelineOp} >= {"AsyncThread", "TmaLoad", "TCGen05Mma"}
    # quack's non-persistent tile scheduler carries a 0-stage state it never advances.
    assert pipeline.PipelineState(0, 0, 0, 1).stages == 0
    with pytest.raises(ValueError, match="non-negative"):
        pipeline.PipelineState(-1, 0, 0, 0)


# ---- a runtime pointer (make_ptr) as a field of an argument class: new_from_mlir_values rebuilds it
# from the value its __get_mlir_types__ announced (quack's TileSchedulerOptions.tile_count_semaphore) --

from cutlass.cute.runtime import make_ptr  # noqa: E402


@dataclass
class WithPointer(JitArgument):
    out: object

    def __c_pointers__(self):
        return self.out.__c_pointers__()

    def __get_mlir_types__(self):
        return self.out.__get_mlir_types__()

    def __new_from_mlir_values__(self, values):
        return WithPointer(cutlass.new_from_mlir_values(self.out, values))


@cute.kernel
def fill_through_pointer_kernel(args: WithPointer):
    i = cute.arch.thread_idx()[0]
    t = cute.make_tensor(args.out, cute.make_layout(8))
    t[i] = cutlass.Float32(i * 2 + 1)


@cute.jit
def fill_through_pointer(args: WithPointer):
    fill_through_pointer_kernel(args).launch(grid=(1, 1, 1), block=(8, 1, 1))


def test_a_runtime_pointer_field_of_an_argument_class_is_rebuilt_as_a_pointer():
    a = np.zeros(8, dtype=np.float32)
    args = WithPointer(make_ptr(cutlass.Float32, a.ctypes.data, cute.AddressSpace.gmem, assumed_align=16))
    cute.compile(fill_through_pointer, args, options="--target cpu")(args)
    np.testing.assert_array_equal(a, np.arange(8, dtype=np.float32) * 2 + 1)


def test_a_number_knows_its_type_width_and_signedness():
    # FlashAttention-4's shuffle_sync asserts `value.width % 32 == 0` on an Int64 value.
    assert Int32(3).width == 32 and cutlass.Int64(3).width == 64 and cutlass.Float16(1.0).width == 16
    assert Int32(3).signed and not cutlass.Uint32(3).signed

    @cute.jit
    def widths(x: cutlass.Int64):
        assert x.width == 64
        return x

    widths(cutlass.Int64(5))


def test_a_thread_slice_of_a_tiled_copy_slices_again():
    # FlashAttention-4's pack_gqa.store_O: gmem_thr_copy.get_slice(0).partition_S(cO) (CuTe's ThrCopy
    # is a TiledCopy); thread 0's partition of an identity tensor names thread 0's coordinates.
    @cute.jit
    def first_coordinates():
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32)
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((4, 8), stride=(8, 1)), cute.make_layout((1, 2)))
        thr = tiled.get_slice(5)
        again = thr.get_slice(0)
        assert again.size == tiled.size
        part = again.partition_S(cute.make_identity_tensor((4, 16)))
        return part[0]

    assert first_coordinates() == (0, 0)


# ---- runtime tensors (from_dlpack) as fields of an argument class: each field becomes a tensor of
# the trace, its dynamic extents and strides read at every call (quack's GemmAct EpilogueArguments
# holding the post-activation output) -----------------------------------------------------------

from cutlass.cute.runtime import from_dlpack  # noqa: E402


@dataclass
class WithTensors(JitArgument):
    src: object
    dst: object

    def __c_pointers__(self):
        return [p for f in fields(self) for p in getattr(self, f.name).__c_pointers__()]

    def __get_mlir_types__(self):
        self._counts = [len(getattr(self, f.name).__get_mlir_types__()) for f in fields(self)]
        return [t for f in fields(self) for t in getattr(self, f.name).__get_mlir_types__()]

    def __new_from_mlir_values__(self, values):
        n = len(self.src.__get_mlir_types__())
        return WithTensors(cutlass.new_from_mlir_values(self.src, values[:n]),
                           cutlass.new_from_mlir_values(self.dst, values[n:]))


@cute.kernel
def transpose_scaled_kernel(args: WithTensors):
    i = cute.arch.thread_idx()[0]
    for j in range(args.src.shape[1]):
        args.dst[j, i] = args.src[i, j] * 3.0


@cute.jit
def transpose_scaled(args: WithTensors):
    assert isinstance(args.src, cute.Tensor) and isinstance(args.dst, cute.Tensor)
    transpose_scaled_kernel(args).launch(grid=(1, 1, 1), block=(args.src.shape[0], 1, 1))


def test_runtime_tensor_fields_of_an_argument_class_are_tensors_read_at_each_call():
    def run(compiled, rows, cols):
        base = np.arange(rows * 2 * cols, dtype=np.float32).reshape(rows, 2 * cols)
        src = base[:, ::2]  # strided: column stride 2, row stride 2 * cols
        dst = np.zeros((cols, rows), dtype=np.float32)
        args = WithTensors(from_dlpack(src).mark_layout_dynamic(), from_dlpack(dst).mark_layout_dynamic())
        compiled = compiled or cute.compile(transpose_scaled, args, options="--target cpu")
        compiled(args)
        np.testing.assert_array_equal(dst, src.T * 3)
        return compiled

    compiled = run(None, 4, 3)
    run(compiled, 6, 5)  # other extents and strides, the same compiled function


@cute.jit
def tma_atom_of(t: cutlass.Constexpr):
    cute.nvgpu.cpasync.make_tiled_tma_atom(cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(), t,
                                           cute.make_layout((8, 8), stride=(8, 1)), (8, 8))


def test_make_tiled_tma_atom_refuses_a_host_tensor_that_is_not_an_argument():
    t = from_dlpack(np.zeros((8, 8), dtype=np.float16))
    with pytest.raises(cutlass.DSLRuntimeError, match="must be a tensor of the traced function, got "
                                                      "cutlass.cute.runtime.Tensor") as e:
        cute.compile(tma_atom_of, t, options="--target cpu")
    assert "test_library_regressions.py" in str(e.value)


# ---- a thread's slice of a tiled copy / MMA takes loc= and ip= (quack's partition_for_epilogue) ---

@cute.jit
def partitions_with_locations(a: cute.Tensor, texts: cutlass.Constexpr):
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32)
    thr_copy = cute.make_tiled_copy_tv(atom, cute.make_layout(4), cute.make_layout(2)).get_slice(1)
    thr_mma = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cutlass.Float32)).get_slice(0)
    for part in (thr_copy.partition_S(a, loc=None, ip=None), thr_copy.partition_D(a, loc=None, ip=None),
                 thr_copy.retile(a, loc=None, ip=None), thr_mma.partition_C(cute.make_tensor(a.iterator, cute.make_layout((2, 4))), loc=None, ip=None)):
        texts.append(str(part.layout))
    texts.append(str(thr_copy.retile(a).layout))


def test_thread_slices_take_loc_and_ip():
    texts = []
    a = np.zeros(8, dtype=np.float32)
    cute.compile(partitions_with_locations, from_dlpack(a), texts, options="--target cpu")
    # Thread 1 of 4 with 2 values each: values 2..3 of the 8; retile regroups the 8 by 2 values.
    # Thread 1 of 4 copying 2 values each: its 2 contiguous values, one copy of one value each.
    assert texts[0] == texts[1] == "((1,2),1):((0,1),0)"
    assert texts[2] == texts[4]  # retile is the same with and without them
    # One thread of a 1x1x1 MMA: all of the (2,4) accumulator tile, one value per MMA.
    assert texts[3] == "(1,2,4):(0,1,2)"


# ---- a tiled copy's tiler_mn is one layout per mode (CuTe's Tiler_MN): quack's gather_A GEMM and
# FlashAttention-4's forward read `tiled_copy.tiler_mn[0].shape`; FA4's SM100 backward builds a
# copy from another's tiler_mn -------------------------------------------------------------------

def test_a_tiled_copys_tiler_is_one_layout_per_mode():
    seen = {}

    @cute.jit
    def tiler_modes():
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32)
        # 8 rows of 4 threads, each thread 4 consecutive columns: an 8 x 16 tile.
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((8, 4), stride=(4, 1)), cute.make_layout((1, 4)))
        rows, cols = tiled.get_slice(5).tiler_mn
        again = cute.make_tiled_copy(atom, tiled.layout_tv_tiled, tiled.tiler_mn)
        part = again.get_slice(5).partition_S(cute.make_identity_tensor((8, 16)))
        seen["modes"] = (str(rows), str(cols), rows.shape, cute.size(cols), 24 % rows.shape == 0)
        seen["coords"] = (part[0], part[3])

    tiler_modes()
    assert seen["modes"] == ("8:1", "16:1", 8, 16, True)
    assert seen["coords"] == ((1, 4), (1, 7))  # thread 5 = row 1, thread column 1: tile columns 4..7


def test_a_tiled_copy_made_from_a_layout_tiler_keeps_it():
    seen = {}

    @cute.jit
    def every_other_row():
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32)
        # 32 threads, one value each, over a 4 x 8 tile whose rows are every other row of the tensor.
        tiled = cute.make_tiled_copy(atom, cute.make_layout((32, 1)), (cute.make_layout(4, stride=2), 8))
        part = tiled.get_slice(5).partition_S(cute.make_identity_tensor((8, 8)))
        seen["modes"] = [str(mode) for mode in tiled.tiler_mn]
        seen["first"] = part[0]

    every_other_row()
    assert seen["modes"] == ["4:2", "8:1"]
    assert seen["first"] == (2, 1)  # thread 5 is the tile's (1, 1) (column-major over 4 x 8): tensor row 2


# ---- quack's SM100 GEMM (gather_A at 2 CTAs): the pair's odd CTA forwards its cp.async producers'
# completion to the even CTA's full barrier with MbarrierArray.arrive_mbarrier (a plain arrival,
# though the barrier is a TmaLoad one), and its pipeline's create calls pipeline_init_wait with no
# pipeline_init_arrive before it (CUTLASS's pipeline_init_wait is a bare cluster wait, which goes
# on when the thread has no arrival pending) ---------------------------------------------------------

from cutlass import Int64  # noqa: E402


@cute.kernel
def peer_arrival_kernel(res: cute.Tensor):
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    pipeline.pipeline_init_wait(cluster_shape_mn=(2, 1))
    mbar = cute.arch.alloc_smem(Int64, 1, alignment=8)
    full = pipeline.MbarrierArray(mbar, 1, (pipeline.PipelineOp.TmaLoad,
                                            pipeline.CooperativeGroup(pipeline.Agent.Thread, 2)), tx_count=64)
    pipeline.pipeline_init_arrive(cluster_shape_mn=(2, 1), is_relaxed=True)
    pipeline.pipeline_init_wait(cluster_shape_mn=(2, 1))
    if tidx == 0:
        full.arrive_mbarrier(0, dst_rank=rank & 0xFE)  # both CTAs of the pair, at the even one's barrier
        if rank % 2 == 0:
            full.wait(0, 0)  # two arrivals and no transaction bytes complete it
            res[bidx] = 1
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


@cute.jit
def peer_arrival_host(res: cute.Tensor):
    peer_arrival_kernel(res).launch(grid=(4, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))


def test_arrive_mbarrier_is_one_thread_arrival_at_the_peer_ctas_barrier():
    res = np.full(4, -1, np.int32)
    cute.compile(peer_arrival_host, res, options="--target cpu")(res)
    np.testing.assert_array_equal(res, [1, -1, 1, -1])


# ---- quack's SM100 epilogue with C: `copy_atom.op` of its smem store atom picks the matching load
# (stmatrix -> ldmatrix), and cute.shape of its epilogue tile (a tile of layouts) sizes a stage -----

def test_a_copy_atom_gives_back_its_operation():
    from cutlass.cute.nvgpu import warp
    st = cute.make_copy_atom(warp.StMatrix8x8x16bOp(transpose=True, num_matrices=4), cutlass.BFloat16)
    assert isinstance(st.op, warp.StMatrix8x8x16bOp)
    assert (st.op.transpose, st.op.num_matrices) == (True, 4)
    ld = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(num_matrices=2), cutlass.Float16)
    assert isinstance(ld.op, warp.LdMatrix8x8x16bOp) and (ld.op.transpose, ld.op.num_matrices) == (False, 2)
    assert isinstance(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32).op,
                      cute.nvgpu.CopyUniversalOp)


def test_the_shape_of_a_tile_of_layouts_is_its_modes_shapes():
    tile = (cute.make_layout(128), cute.make_layout((2, 16), stride=(1, 64)))
    assert cute.shape(tile) == (128, (2, 16))
    assert cute.size(cute.shape(tile)) == 128 * 32
    assert cute.shape(tile, mode=[1]) == (2, 16)
    assert cute.shape((4, (2, 3))) == (4, (2, 3))  # an IntTuple stays one
