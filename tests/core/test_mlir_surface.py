"""The MLIR-level names NVIDIA's examples reach into (cutlass._mlir, cutlass.cutlass_dsl,
cutlass.base_dsl) and the launch features (cooperative, PDL with griddepcontrol, launch events).
Kernels run on the CPU emulator against Python models; inline PTX is compiled to PTX where
libNVVM is present and refused by the emulator at the user's line."""
import os

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Boolean, Float32, Int32, Uint32
from cutlass._mlir import ir
from cutlass._mlir.dialects import llvm
from cutlass.base_dsl.runtime.cuda import checkCudaErrors
from cutlass.cutlass_dsl import (T, DSLCudaRuntimeError, dsl_user_op, for_generate, if_generate, not_,
                                 while_generate, yield_out)
import toolchain


@pytest.fixture
def no_file_cache(monkeypatch):
    # these tests read generated NVVM IR / PTX, which a compile-cache hit does not regenerate
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "1")


# ---- names -------------------------------------------------------------------------------------

def test_type_constructors_name_the_dsl_types():
    assert T.i32() == Int32.mlir_type and T.bool() == Boolean.mlir_type and T.f32() == Float32.mlir_type
    assert T.i64() == cutlass.Int64.mlir_type and T.f16() == cutlass.Float16.mlir_type
    assert ir.IntegerType.get_signless(32) == Int32.mlir_type
    assert ir.IntegerType.get_signless(1) == Boolean.mlir_type
    assert ir.IntegerType.get_unsigned(32) == Uint32.mlir_type
    assert ir.F32Type.get() == Float32.mlir_type
    with pytest.raises(ValueError, match="no 7-bit"):
        ir.IntegerType.get_signless(7)
    from cutlass import for_generate as fg, yield_out as yo  # print_latex.py imports them from cutlass
    assert fg is for_generate and yo is yield_out


def test_check_cuda_errors_unwraps_results_and_raises_the_cuda_error_class():
    assert checkCudaErrors((0,)) is None
    assert checkCudaErrors((0, 5)) == 5
    assert checkCudaErrors((0, "a", "b")) == ("a", "b")
    with pytest.raises(DSLCudaRuntimeError) as info:
        checkCudaErrors((720, None))
    assert int(info.value.error_code) == 720
    assert isinstance(info.value, RuntimeError)  # callers catching RuntimeError keep working


def test_static_not_and_ir_value_keywords():
    assert not_(False) is True and not_(True) is False
    assert Int32(3).ir_value(loc=None, ip=None) is not None


# ---- inline PTX ---------------------------------------------------------------------------------

@dsl_user_op
def ptx_add(a: Int32, b: Int32, *, loc=None, ip=None) -> Int32:
    return Int32(llvm.inline_asm(T.i32(), [Int32(a).ir_value(loc=loc, ip=ip), Int32(b).ir_value()],
                                 "add.s32 $0, $1, $2;", "=r,r,r", has_side_effects=False,
                                 is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip))
ASM_LINE = ptx_add.__code__.co_firstlineno + 2  # decorator, def, then the llvm.inline_asm call


@dsl_user_op
def ptx_any(pred, *, loc=None, ip=None) -> Boolean:
    return Boolean(llvm.inline_asm(
        T.bool(), [Boolean(pred).ir_value(), Int32(0xFFFFFFFF).ir_value()],
        "{\n\t.reg .pred ps;\n\t.reg .pred pd;\n\tsetp.ne.b32 ps, $1, 0;\n\t"
        "vote.sync.any.pred pd, ps, $2;\n\tselp.b32 $0, 1, 0, pd;\n\t}",
        "=r,r,i", has_side_effects=True, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT))


@cute.kernel
def asm_kernel(a: cute.Tensor, out: cute.Tensor, flags: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    out[t] = ptx_add(a[t], 7)
    flags[t] = Int32(ptx_any(a[t] > 100))


@cute.jit
def asm_host(a: cute.Tensor, out: cute.Tensor, flags: cute.Tensor):
    asm_kernel(a, out, flags).launch(grid=(1, 1, 1), block=(32, 1, 1))


def _args():
    return np.arange(32, dtype=np.int32), np.zeros(32, np.int32), np.zeros(32, np.int32)


def test_inline_asm_compiles_to_the_users_ptx(no_file_cache):
    compiled = cute.compile(asm_host, *_args())
    assert 'asm "add.s32 $0, $1, $2;", "=r,r,r"' in compiled.nvvm_ir
    assert "vote.sync.any.pred" in compiled.nvvm_ir
    toolchain.ptx_of(compiled)
    assert "add.s32" in compiled.__ptx__ and "vote.sync.any.pred" in compiled.__ptx__


@cute.kernel
def extra_operand_kernel(out: cute.Tensor, order: cutlass.Constexpr):
    # quack's tensormap update: `order` is spliced into the text and also passed as an operand
    # the constraint string does not name.
    llvm.inline_asm(None, [out.iterator.toint().ir_value(), Int32(5).ir_value(), Int32(order).ir_value()],
                    f"st.global.b32 [$0+{4 * order}], $1;", "l,r", has_side_effects=True,
                    is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT)


@cute.jit
def extra_operand_host(out: cute.Tensor, order: cutlass.Constexpr):
    extra_operand_kernel(out, order).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_inline_asm_drops_operands_the_constraints_and_text_do_not_name(no_file_cache):
    compiled = cute.compile(extra_operand_host, np.zeros(4, np.int32), 2)
    assert 'asm sideeffect "st.global.b32 [$0+8], $1;", "l,r"(i64 ' in compiled.nvvm_ir
    call = compiled.nvvm_ir.split('asm sideeffect "st.global.b32')[1].split("\n")[0]
    assert call.count("i32 ") == 1  # the unnamed third operand is not passed on
    toolchain.ptx_of(compiled)
    assert "st.global.b32" in compiled.__ptx__


def test_inline_asm_naming_an_operand_past_its_constraints_is_refused():
    @cute.kernel
    def k(out: cute.Tensor):
        llvm.inline_asm(None, [out.iterator.toint().ir_value(), Int32(5).ir_value(), Int32(6).ir_value()],
                        "st.global.b32 [$0], $2;", "l,r", has_side_effects=True)

    @cute.jit
    def host(out: cute.Tensor):
        k(out).launch(grid=(1, 1, 1), block=(1, 1, 1))

    with pytest.raises(Exception, match="names 2 input\\(s\\) but 3 operand\\(s\\) were given"):
        cute.compile(host, np.zeros(4, np.int32))


def test_the_emulator_refuses_inline_asm_at_the_users_line():
    with pytest.raises(cutlass.DSLRuntimeError, match="inline PTX") as info:
        asm_host(*_args())
    assert info.value.filename == os.path.abspath(__file__)
    assert info.value.line == ASM_LINE


def test_inline_asm_outside_a_kernel_is_a_user_error():
    @cute.jit
    def host():
        ptx_add(Int32(1), Int32(2))

    with pytest.raises(cutlass.DSLUserCodeError, match="only available inside a @cute.kernel"):
        host()


def test_inline_asm_rejects_other_dialects():
    @cute.kernel
    def k():
        llvm.inline_asm(T.i32(), [], "mov.b32 $0, 1;", "=r", asm_dialect=llvm.AsmDialect.AD_Intel)

    @cute.jit
    def host():
        k().launch(grid=(1, 1, 1), block=(1, 1, 1))

    with pytest.raises(cutlass.DSLUserCodeError, match="AT&T"):
        host()


# ---- explicit control flow builders ----------------------------------------------------------------

@cute.kernel
def generate_kernel(a: cute.Tensor, out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    x = a[t]
    # if_generate with one result gives the value itself
    y = if_generate(x > 10, lambda: x * 2, lambda: x + 100, None, [Int32])
    # a while loop: the smallest power of two above x
    w = while_generate([Int32(1)], lambda p: p <= x)
    with w as (p,):
        yield_out([p * 2])
    # a for loop summing i for i in [0, x)
    f = for_generate(0, x, 1, [Int32(0)])
    with f as (i, acc):
        yield_out([acc + i])
    out[t, 0] = y
    out[t, 1] = w.results[0]
    out[t, 2] = f.results[0]
    out[t, 3] = Int32(not_(x > 5))


@cute.jit
def generate_host(a: cute.Tensor, out: cute.Tensor):
    generate_kernel(a, out).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_explicit_control_flow_builders_match_a_python_model():
    a = np.arange(32, dtype=np.int32)
    out = np.zeros((32, 4), np.int32)
    generate_host(a, out)
    for x in a.tolist():
        p = 1
        while p <= x:
            p *= 2
        expect = [x * 2 if x > 10 else x + 100, p, sum(range(x)), int(not x > 5)]
        assert out[x].tolist() == expect, x


def test_yield_out_outside_a_loop_is_an_error():
    with pytest.raises(cutlass.DSLUserCodeError, match="yield_out is only valid"):
        yield_out([1])


# ---- programmatic dependent launch ------------------------------------------------------------------

@cute.kernel
def pdl_kernel(src: cute.Tensor, dst: cute.Tensor, scale: Int32):
    t, _, _ = cute.arch.thread_idx()
    b, _, _ = cute.arch.block_idx()
    i = b * 32 + t
    cute.arch.griddepcontrol_wait()
    dst[i] = src[i] * scale
    cute.arch.griddepcontrol_launch_dependents()


@cute.jit
def pdl_host(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    pdl_kernel(a, b, 2).launch(grid=(4, 1, 1), block=(32, 1, 1), use_pdl=True)
    pdl_kernel(b, c, 3).launch(grid=(4, 1, 1), block=(32, 1, 1), use_pdl=True)


def test_pdl_kernels_run_in_order_on_the_emulator(no_file_cache):
    a = np.arange(128, dtype=np.int32)
    b, c = np.zeros_like(a), np.zeros_like(a)
    pdl_host(a, b, c)
    np.testing.assert_array_equal(b, a * 2)
    np.testing.assert_array_equal(c, a * 6)
    compiled = cute.compile(pdl_host, a, b, c)
    assert compiled.nvvm_ir.index("griddepcontrol.wait;") < compiled.nvvm_ir.index("griddepcontrol.launch_dependents;")
    assert " pdl args(" in compiled.__mlir__


@cute.jit
def pdl_host_switched(a: cute.Tensor, b: cute.Tensor, use_pdl: bool):
    pdl_kernel(a, b, 5).launch(grid=(4, 1, 1), block=(32, 1, 1), use_pdl=use_pdl)


def test_use_pdl_may_be_a_run_time_argument(no_file_cache):
    # A `use_pdl: bool` jit argument is a run-time Boolean (NVIDIA's Blackwell fmha.py passes one):
    # the kernel is traced once and launched from an if on it, with PDL in its true branch.
    a = np.arange(128, dtype=np.int32)
    b = np.zeros_like(a)
    compiled = cute.compile(pdl_host_switched, a, b, False)
    ir = compiled.__mlir__
    assert ir.count(" pdl args(") == 1 and ir.count("launch @") == 2, ir
    for use_pdl in (True, False):
        b[:] = 0
        compiled(a, b, use_pdl)
        np.testing.assert_array_equal(b, a * 5)


# ---- cooperative launch ------------------------------------------------------------------------------

@cute.kernel
def coop_kernel(out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    b, _, _ = cute.arch.block_idx()
    bd, _, _ = cute.arch.block_dim()
    if t == 0:
        out[b] = b * bd


@cute.jit
def coop_host(out: cute.Tensor, blocks: cutlass.Constexpr, threads: cutlass.Constexpr):
    coop_kernel(out).launch(grid=(blocks, 1, 1), block=(threads, 1, 1), cooperative=True)


def test_cooperative_launch_that_fits_runs():
    out = np.zeros(8, np.int32)
    coop_host(out, 8, 128)
    np.testing.assert_array_equal(out, np.arange(8) * 128)


def test_too_large_cooperative_grid_raises_cooperative_launch_too_large():
    # The emulator models an H100 (132 SMs, 2048 threads each): 10000 blocks of 1024 threads
    # cannot be co-resident (at most 264), as NVIDIA's cooperative_launch.py expects.
    out = np.zeros(10000, np.int32)
    with pytest.raises(DSLCudaRuntimeError) as info:
        coop_host(out, 10000, 1024)
    assert int(info.value.error_code) == 720  # cudaErrorCooperativeLaunchTooLarge
    assert "264" in str(info.value)
    out = np.zeros(264, np.int32)
    coop_host(out, 264, 1024)  # exactly the limit fits
    np.testing.assert_array_equal(out, np.arange(264) * 1024)


# ---- launch events -------------------------------------------------------------------------------------

class cudaEvent_t(int):  # noqa: N801 - stands in for cuda.bindings.runtime.cudaEvent_t (no cuda-python here)
    pass


class CUevent(int):  # noqa: N801 - stands in for cuda.bindings.driver.CUevent
    pass


@cute.kernel
def event_kernel(out: cute.Tensor, value: Int32):
    t, _, _ = cute.arch.thread_idx()
    out[t] = value + t


@cute.jit
def completion_event_host(out: cute.Tensor, value: Int32, event):
    event_kernel(out, value).launch(grid=(1, 1, 1), block=(16, 1, 1), launch_completion_event=event,
                                    launch_completion_event_flags=0)


@cute.jit
def programmatic_event_host(out: cute.Tensor, value: Int32, event, trigger: cutlass.Constexpr[int] = 0):
    event_kernel(out, value).launch(grid=(1, 1, 1), block=(16, 1, 1), programmatic_event=event,
                                    programmatic_event_flags=0, programmatic_event_trigger_at_block_start=trigger)


@pytest.mark.parametrize("event_type", [cudaEvent_t, CUevent])
def test_event_launch_attributes_take_runtime_event_handles(event_type, no_file_cache):
    out = np.zeros(16, np.int32)
    completion_event_host(out, 5, event_type(0x1234))  # the emulator has no events to record
    np.testing.assert_array_equal(out, np.arange(16) + 5)
    programmatic_event_host(out, 9, event_type(0x1234), 1)
    np.testing.assert_array_equal(out, np.arange(16) + 9)
    compiled = cute.compile(programmatic_event_host, out, 9, event_type(0x99), 1)
    assert "programmatic_event(" in compiled.__mlir__ and ", 0, 1) args(" in compiled.__mlir__


def test_launch_attribute_validation():
    out = np.zeros(16, np.int32)
    with pytest.raises(cutlass.DSLUserCodeError, match="must be 0 or 1") as info:
        programmatic_event_host(out, 1, cudaEvent_t(1), 2)
    assert info.value.code == "LAUNCH_INVALID_ATTRIBUTE"

    @cute.jit
    def bad_event(out: cute.Tensor):
        event_kernel(out, 0).launch(grid=(1, 1, 1), block=(16, 1, 1), launch_completion_event=Int32(3))

    with pytest.raises(cutlass.DSLUserCodeError, match="cudaEvent_t or CUevent"):
        bad_event(out)

    @cute.jit
    def dynamic_flag(out: cute.Tensor, flag: Boolean):
        event_kernel(out, 0).launch(grid=(1, 1, 1), block=(16, 1, 1), cooperative=flag)

    with pytest.raises(cutlass.DSLUserCodeError, match="compile time"):
        dynamic_flag(out, True)


def test_launch_refuses_unknown_arguments_and_checks_max_number_threads():
    out = np.zeros(16, np.int32)

    @cute.jit
    def misspelt(out: cute.Tensor):
        event_kernel(out, 0).launch(grid=(1, 1, 1), block=(16, 1, 1), min_block_per_mp=2)

    with pytest.raises(cutlass.DSLUserCodeError, match="unknown argument\\(s\\) min_block_per_mp") as info:
        misspelt(out)
    assert info.value.code == "LAUNCH_INVALID_ATTRIBUTE"

    @cute.jit
    def with_hint(out: cute.Tensor, most: cutlass.Constexpr[int]):
        event_kernel(out, 4).launch(grid=(1, 1, 1), block=(16, 1, 1), max_number_threads=[most, 1, 1])

    with_hint(out, 32)  # a hint the block stays within runs
    np.testing.assert_array_equal(out, np.arange(16) + 4)
    with pytest.raises(cutlass.DSLUserCodeError, match="max_number_threads=\\[8, 1, 1\\] is smaller than the block"):
        with_hint(out, 8)


# ---- GPU (the lead runs these) ----------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_inline_asm_and_too_large_cooperative_grid():
    torch = pytest.importorskip("torch")
    a = torch.arange(32, dtype=torch.int32, device="cuda")
    out = torch.zeros(32, dtype=torch.int32, device="cuda")
    flags = torch.zeros(32, dtype=torch.int32, device="cuda")
    from cutlass.cute.runtime import from_dlpack
    asm_host(from_dlpack(a), from_dlpack(out), from_dlpack(flags))
    torch.cuda.synchronize()
    assert out.tolist() == [x + 7 for x in range(32)]
    assert flags.tolist() == [0] * 32
    big = torch.zeros(10000, dtype=torch.int32, device="cuda")
    with pytest.raises(DSLCudaRuntimeError) as info:
        coop_host(from_dlpack(big), 10000, 1024)
    assert int(info.value.error_code) == 720


def test_bindings_module_path_and_vector_extract():
    from cutlass._mlir._mlir_libs._cutlass_ir._mlir.ir import IntegerType  # fmha.py's import
    from cutlass._mlir.dialects import vector
    assert IntegerType.get_signless(1) == Boolean.mlir_type

    @cute.kernel
    def k(a: cute.Tensor, out: cute.Tensor):
        frag = cute.make_rmem_tensor((4,), Float32)
        for i in cutlass.range_constexpr(4):
            frag[i] = a[i] * 2.0
        v = frag.load()
        out[0] = Float32(vector.extract(v, [], [2])) + Float32(vector.extract(v, [], [3]))

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        k(a, out).launch(grid=(1, 1, 1), block=(1, 1, 1))

    a = np.array([1, 2, 3, 4], np.float32)
    out = np.zeros(1, np.float32)
    host(a, out)
    assert out[0] == 2 * 3 + 2 * 4
    with pytest.raises(cutlass.DSLUserCodeError, match="one static index"):
        vector.extract(None, [], [0, 1])


# ---- C structures (ffi/jit_argument.py's types) ----------------------------------------------------

def _tensor_struct(rank=3):
    i32 = ir.IntegerType.get_signless(32)
    return llvm.StructType.get_literal([llvm.PointerType.get(), llvm.StructType.get_literal([i32] * rank),
                                        llvm.StructType.get_literal([i32] * rank)])


def test_struct_types_have_the_c_layout():
    # struct { void* ptr; int32_t shape[3]; int32_t strides[3]; }: offsets 0, 8..16, 20..28
    assert [off for _, off in llvm.flatten_type(_tensor_struct())] == [0, 8, 12, 16, 20, 24, 28]
    assert [t for t, _ in llvm.flatten_type(_tensor_struct())] == [cutlass.Int64.mlir_type] + [Int32.mlir_type] * 6
    i8, i64 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(64)
    # struct { char c; int64_t x; char d; }: x aligned to 8
    assert [off for _, off in llvm.flatten_type(llvm.StructType.get_literal([i8, i64, i8]))] == [0, 8, 16]
    assert [off for _, off in llvm.flatten_type(llvm.StructType.get_literal([i8, i64, i8], packed=True))] == [0, 1, 9]


class StructView(ir.Value):  # as jit_argument.py's ExampleTensorValue wraps the struct value
    @property
    def shape(self):
        i32 = ir.IntegerType.get_signless(32)
        shape = llvm.extractvalue(llvm.StructType.get_literal([i32] * 3), self, [1])
        return tuple(llvm.extractvalue(i32, shape, [i]) for i in range(3))


@cute.kernel
def struct_kernel(out: cute.Tensor, a: Int32, b: Int32, c: Int32):
    s = llvm.rebuild_value(_tensor_struct(), [cutlass.Int64(0), a, b, c, Int32(1), Int32(2), Int32(3)])
    view = StructView(s)
    out[0], out[1], out[2] = view.shape
    out[3] = llvm.extractvalue(Int32.mlir_type, s, [2, 1])


@cute.jit
def struct_host(out: cute.Tensor, a: Int32, b: Int32, c: Int32):
    struct_kernel(out, a, b, c).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_extractvalue_picks_struct_fields():
    out = np.zeros(4, np.int32)
    struct_host(out, 7, 8, 9)
    assert out.tolist() == [7, 8, 9, 2]
    s = llvm.StructValue(_tensor_struct(), [0] * 7)
    with pytest.raises(cutlass.DSLUserCodeError, match="no field 3"):
        llvm.extractvalue(None, s, [3])
    with pytest.raises(cutlass.DSLUserCodeError, match="needs a struct value"):
        llvm.extractvalue(None, Int32(1), [0])


@cute.kernel
def grid_barrier_kernel(counter: cute.Tensor, seen: cute.Tensor, nblocks: Int32):
    # A grid-wide barrier from atomics: only correct when every block is resident at once.
    t, _, _ = cute.arch.thread_idx()
    b, _, _ = cute.arch.block_idx()
    if t == 0:
        cute.arch.atomic_add(counter.iterator, 1)
        arrived = cute.arch.atomic_add(counter.iterator, 0)
        while arrived < nblocks:
            arrived = cute.arch.atomic_add(counter.iterator, 0)
        seen[b] = arrived
    cute.arch.sync_threads()


@cute.jit
def grid_barrier_host(counter: cute.Tensor, seen: cute.Tensor, nblocks: cutlass.Constexpr):
    grid_barrier_kernel(counter, seen, nblocks).launch(grid=(nblocks, 1, 1), block=(64, 1, 1), cooperative=True)


def test_cooperative_grid_runs_all_blocks_at_once_on_the_emulator(monkeypatch):
    monkeypatch.setenv("OPENCUTE_EMULATOR_THREADS", "1")  # would deadlock if blocks ran one after another
    counter, seen = np.zeros(1, np.int32), np.zeros(12, np.int32)
    grid_barrier_host(counter, seen, 12)
    assert counter[0] == 12
    np.testing.assert_array_equal(seen, 12)  # every block saw all 12 arrivals


@cute.kernel
def asm_pointer_kernel(out: cute.Tensor):
    # FlashAttention-4's cpasync_reduce_bulk_add_f32 passes `gmem_ptr.llvm_ptr` to an "l" operand.
    llvm.inline_asm(None, [out.iterator.llvm_ptr, Int32(4).ir_value()],
                    "st.global.u32 [$0], $1;", "l,r", has_side_effects=True, is_align_stack=False,
                    asm_dialect=llvm.AsmDialect.AD_ATT)


@cute.jit
def asm_pointer_host(out: cute.Tensor):
    asm_pointer_kernel(out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_a_pointer_is_an_inline_asm_operand_as_its_64_bit_address(no_file_cache):
    compiled = cute.compile(asm_pointer_host, np.zeros(4, np.int32))
    asm_call = next(line for line in compiled.nvvm_ir.splitlines() if "st.global.u32" in line)
    assert '"l,r' in asm_call and "(i64 " in asm_call, asm_call


# ---- math.absi / absf on TensorSSA values re-wrapped with cute.TensorSSA (FA4's score mods) -----

@cute.kernel
def _abs_kernel(src_i: cute.Tensor, src_f: cute.Tensor, out_i: cute.Tensor, out_f: cute.Tensor):
    from cutlass._mlir.dialects import math as mlir_math
    diff = src_i.load()
    out_i.store(cute.TensorSSA(mlir_math.absi(diff), diff.shape, diff.dtype) * cute.full_like(diff, 2))
    x = src_f.load()
    out_f.store(cute.TensorSSA(mlir_math.absf(x), x.shape, x.dtype))
    out_f[0] = mlir_math.absf(src_f[0] - Float32(10.0))


@cute.jit
def _abs_host(src_i: cute.Tensor, src_f: cute.Tensor, out_i: cute.Tensor, out_f: cute.Tensor):
    _abs_kernel(src_i, src_f, out_i, out_f).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_mlir_math_abs_of_tensor_ssa_and_scalars():
    src_i = np.array([-3, 0, 7, -2147483647, 5, -1, 2, -9], np.int32)
    src_f = np.array([-1.5, 2.0, -0.0, 3.25, -7.0, 0.5, -2.5, 1.0], np.float32)
    out_i, out_f = np.zeros(8, np.int32), np.zeros(8, np.float32)
    args = [cute.runtime.from_dlpack(a) for a in (src_i, src_f, out_i, out_f)]
    cute.compile(_abs_host, *args, options="--target cpu")(*args)
    np.testing.assert_array_equal(out_i, (np.abs(src_i.astype(np.int64)) * 2).astype(np.int32))
    want_f = np.abs(src_f)
    want_f[0] = abs(src_f[0] - 10.0)
    np.testing.assert_array_equal(out_f, want_f)
