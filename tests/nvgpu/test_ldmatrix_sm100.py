"""ldmatrix .m16n16 .trans .b8 (sm_100a; cute.nvgpu.warp.LdMatrix16x16x8bOp, which NVIDIA's
mixed-input FMHA decode uses to transpose 8-bit V tiles) on the CPU emulator, checked against a
numpy model of the PTX ISA's description ("each thread loads 4 consecutive columns across 2 rows"
of the transposed 16x16 matrix, two 32-bit registers a matrix), and its PTX for sm_100a."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import warp
import toolchain

EMU = "--target cpu --gpu-arch sm_100a"


def ldmatrix_m16n16_trans_model(mats):
    """mats: (num, 16, 16) bytes as laid out in memory (row r is thread r's 16-byte row). The
    transposed matrix T = mats[m].T; lane l's register 2m + h holds T[l//4 + 8h, 4*(l%4) + e]."""
    num = mats.shape[0]
    out = np.zeros((32, 8 * num), mats.dtype)
    for lane in range(32):
        for m in range(num):
            t = mats[m].T
            for h in range(2):
                for e in range(4):
                    out[lane, 8 * m + 4 * h + e] = t[lane // 4 + 8 * h, 4 * (lane % 4) + e]
    return out


def _kernel(num):
    elems, per_lane = num * 256, 8 * num

    @cute.kernel
    def kernel(a: cute.Tensor, regs: cute.Tensor, back: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        s = cute.make_tensor(cute.arch.alloc_smem(cutlass.Int8, elems, alignment=16), cute.make_layout((elems,)))
        for i in cutlass.range_constexpr(elems // 32):
            s[tidx * (elems // 32) + i] = a[tidx * (elems // 32) + i]
        cute.arch.sync_threads()
        atom = cute.make_copy_atom(warp.LdMatrix16x16x8bOp(transpose=True, num_matrices=num), cutlass.Int8)
        # The atom's own reference layout as the tiled copy: the tile is the atom's data.
        thr = cute.make_tiled_copy(atom, atom.layout_dst_tv, (elems,)).get_slice(tidx)
        dst_g = thr.partition_D(cute.make_tensor(back.iterator, cute.make_layout((elems,))))
        frag = cute.make_fragment_like(dst_g)
        cute.copy(atom, thr.partition_S(s), frag)
        for i in cutlass.range_constexpr(per_lane):
            regs[tidx * per_lane + i] = frag[i]
        cute.copy(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Int8), frag, dst_g)

    @cute.jit
    def run(a: cute.Tensor, regs: cute.Tensor, back: cute.Tensor):
        kernel(a, regs, back).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return run, elems, per_lane


@pytest.mark.parametrize("num", [1, 2])
def test_ldmatrix_m16n16_transposes_bytes_as_the_ptx_isa_describes(num):
    run, elems, per_lane = _kernel(num)
    a = (np.arange(elems) % 251 - 125).astype(np.int8)
    regs, back = np.zeros(32 * per_lane, np.int8), np.zeros(elems, np.int8)
    cute.compile(run, a, regs, back, options=EMU)(a, regs, back)
    np.testing.assert_array_equal(regs.reshape(32, per_lane), ldmatrix_m16n16_trans_model(a.reshape(num, 16, 16)))
    # Through the atom's destination layout each value returns to where it came from.
    np.testing.assert_array_equal(back, a)


def test_ldmatrix_m16n16_ptx_for_sm100a():
    run, elems, per_lane = _kernel(2)
    a, regs, back = np.zeros(elems, np.int8), np.zeros(32 * per_lane, np.int8), np.zeros(elems, np.int8)
    f = cute.compile(run, a, regs, back, options="--gpu-arch sm_100a")
    assert "ldmatrix.sync.aligned.m16n16.x2.trans.shared.b8" in toolchain.ptx_of(f)
    toolchain.require_cubin()
    assert f.__cubin__


@pytest.mark.parametrize("op,dtype,match", [
    (lambda: warp.LdMatrix16x16x8bOp(transpose=False, num_matrices=1), cutlass.Int8, "always transposes"),
    (lambda: warp.LdMatrix16x16x8bOp(transpose=True, num_matrices=4), cutlass.Int8, "num_matrices must be 1 or 2"),
    (lambda: warp.LdMatrix16x16x8bOp(transpose=True, num_matrices=1), cutlass.Float16, "moves 8-bit elements"),
])
def test_ldmatrix_m16n16_refuses_what_the_instruction_lacks(op, dtype, match):
    @cute.kernel
    def kernel(x: cute.Tensor):
        cute.make_copy_atom(op(), dtype)

    @cute.jit
    def run(x: cute.Tensor):
        kernel(x).launch(grid=(1, 1, 1), block=(32, 1, 1))

    x = np.zeros(4, np.int8)
    with pytest.raises(cutlass.DSLUserCodeError, match=match) as e:
        cute.compile(run, x, options=EMU)
    assert e.value.filename == __file__
    with pytest.raises(cutlass.DSLUserCodeError, match="needs sm_100a or newer"):
        good = warp.LdMatrix16x16x8bOp(transpose=True, num_matrices=1)

        @cute.kernel
        def hopper_kernel(x: cute.Tensor):
            cute.make_copy_atom(good, cutlass.Int8)

        @cute.jit
        def hopper(x: cute.Tensor):
            hopper_kernel(x).launch(grid=(1, 1, 1), block=(32, 1, 1))

        cute.compile(hopper, x, options="--target cpu --gpu-arch sm_90a")


def test_ldmatrix_unpacking_of_sub_byte_elements_is_refused_by_name():
    with pytest.raises(cutlass.DSLUserCodeError, match="unpack_bits=4 .* not available"):
        warp.LdMatrix16x16x8bOp(transpose=True, num_matrices=2, unpack_bits=4)
    assert warp.LdMatrix8x16x8bOp(num_matrices=4, unpack_bits=None).num_matrices == 4
