"""What FlashAttention-4's SM100 forward reaches for beyond NVIDIA's examples (its class runs on the
PTX executor as far as its hand-built tcgen05 descriptors): tiled_mma.op's operand source and
major modes, a pointer's `.type.swizzle_type` string, make_tiled_copy_D of a thread's slice, a
tensor-memory pointer made from the integer 0, and the emulated part's SM count on the ptx target."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import OperandMajorMode, tcgen05, warpgroup
from cutlass.utils.hardware_info import HardwareInfo
import toolchain

SM100 = "--target cpu --gpu-arch sm_100a"


def test_tiled_mma_op_names_its_operand_source_and_major_modes(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    seen = {}

    @cute.jit
    def f():
        ts = cute.make_tiled_mma(tcgen05.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (128, 128, 16),
                                                      tcgen05.CtaGroup.ONE, tcgen05.OperandSource.TMEM,
                                                      OperandMajorMode.K, OperandMajorMode.MN))
        seen["tcgen05"] = (ts.op.a_src, ts.op.a_major_mode, ts.op.b_major_mode, ts.op.cta_group)

    @cute.jit
    def g():
        wg = cute.make_tiled_mma(warpgroup.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, 64, 16),
                                                        warpgroup.OperandSource.SMEM, OperandMajorMode.MN,
                                                        OperandMajorMode.K))
        seen["warpgroup"] = (wg.op.a_src, wg.op.a_major_mode, wg.op.b_major_mode)

    f()
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    g()
    assert seen["tcgen05"] == (tcgen05.OperandSource.TMEM, OperandMajorMode.K, OperandMajorMode.MN,
                               tcgen05.CtaGroup.ONE)
    assert seen["warpgroup"] == (warpgroup.OperandSource.SMEM, OperandMajorMode.MN, OperandMajorMode.K)


def test_pointer_type_prints_its_swizzle_as_the_cute_dialect_does():
    seen = {}

    @cute.kernel
    def k(t: cute.Tensor):
        seen["plain"] = str(t.iterator.type.swizzle_type)
        p = cute.arch.alloc_smem(cutlass.Float16, 512, alignment=1024)
        seen["swizzled"] = str(cute.recast_ptr(p, cute.make_swizzle(3, 4, 3)).type.swizzle_type)

    @cute.jit
    def f(t: cute.Tensor):
        k(t).launch(grid=(1, 1, 1), block=(1, 1, 1))

    t = cute.runtime.from_dlpack(np.zeros(64, np.float16))
    cute.compile(f, t, options="--target cpu")
    assert seen == {"plain": '!cute.swizzle<"S<0,4,3>">', "swizzled": '!cute.swizzle<"S<3,4,3>">'}


def test_make_tiled_copy_d_of_a_thread_slice_is_that_of_its_tiled_copy():
    seen = {}

    @cute.jit
    def f():
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32)
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((4, 8), stride=(8, 1)), cute.make_layout((1, 4)))
        store = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=32)
        seen["slice"] = str(cute.make_tiled_copy_D(store, tiled.get_slice(3)).layout_dst_tv_tiled)
        seen["tiled"] = str(cute.make_tiled_copy_D(store, tiled).layout_dst_tv_tiled)

    f()
    assert seen["slice"] == seen["tiled"]


@cute.kernel
def _tmem_from_zero_kernel(out: cute.Tensor):
    tmem = cute.make_ptr(cutlass.Float32, 0, mem_space=cute.AddressSpace.tmem, assumed_align=16)
    out[0] = cutlass.Int32(tmem.toint())


@cute.jit
def _tmem_from_zero(out: cute.Tensor):
    _tmem_from_zero_kernel(out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_a_tensor_memory_pointer_made_from_an_integer_compiles_for_sm100a():
    toolchain.require_libnvvm()
    out = np.full(1, -1, np.int32)
    compiled = cute.compile(_tmem_from_zero, out, options="--target gpu --gpu-arch sm_100a")
    assert ".target sm_100a" in toolchain.ptx_of(compiled)


@pytest.mark.parametrize("target", ["cpu", "ptx"])
def test_the_emulated_part_answers_on_both_emulators(monkeypatch, target):
    monkeypatch.setenv("CUTE_DSL_TARGET", target)
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    assert HardwareInfo().get_device_multiprocessor_count() == 148
