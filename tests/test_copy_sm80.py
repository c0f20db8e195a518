"""SM80 copy atoms on the CPU emulator: ldmatrix / stmatrix lane mapping, cp.async with zero-fill
and commit / wait groups, the race report for shared memory that an unwaited cp.async writes,
tiled copies built on these atoms, and the errors of misuse. Each result is checked against a
numpy model of the PTX ISA's semantics, written here independently of the C++ tables."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync, warp

CPU = "--target cpu"


# ---- numpy models of the PTX ISA -------------------------------------------------------------

def ldmatrix_model(mats, trans):
    """mats: (num, 8, 8) 16-bit matrices. Returns (32, num*2): lane l's register j holds two
    elements: row l//4, columns 2*(l%4)+e (without .trans) or column l//4 of rows 2*(l%4)+e."""
    num = mats.shape[0]
    out = np.zeros((32, num * 2), dtype=mats.dtype)
    for lane in range(32):
        for j in range(num):
            for e in range(2):
                r, c = (lane // 4, 2 * (lane % 4) + e) if not trans else (2 * (lane % 4) + e, lane // 4)
                out[lane, 2 * j + e] = mats[j, r, c]
    return out


def ldmatrix_model_8bit(mats):
    """mats: (num, 8, 16) 8-bit matrices (one 16-byte row per line); lane l's register j holds
    bytes 4*(l%4)..4*(l%4)+3 of row l//4."""
    num = mats.shape[0]
    out = np.zeros((32, num * 4), dtype=mats.dtype)
    for lane in range(32):
        for j in range(num):
            for e in range(4):
                out[lane, 4 * j + e] = mats[j, lane // 4, 4 * (lane % 4) + e]
    return out


# ---- ldmatrix -------------------------------------------------------------------------------

def _ldmatrix_kernel(op, dtype, num, per_lane):
    elems = num * 8 * (16 // (dtype.width // 8))  # num matrices of 8 rows of 16 bytes

    @cute.kernel
    def kernel(a: cute.Tensor, regs: cute.Tensor, back: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        s = cute.make_tensor(cute.arch.alloc_smem(dtype, elems, alignment=16), cute.make_layout((elems,)))
        for i in cutlass.range_constexpr(elems // 32):
            s[tidx * (elems // 32) + i] = a[tidx * (elems // 32) + i]
        cute.arch.sync_threads()
        atom = cute.make_copy_atom(op, dtype)
        # The atom's own reference layout as the tiled copy: the tile is the atom's data.
        tc = cute.make_tiled_copy(atom, atom.layout_dst_tv, (elems,))
        thr = tc.get_slice(tidx)
        src = thr.partition_S(s)
        dst_g = thr.partition_D(cute.make_tensor(back.iterator, cute.make_layout((elems,))))
        frag = cute.make_fragment_like(dst_g)
        cute.copy(atom, src, frag)
        for i in cutlass.range_constexpr(per_lane):
            regs[tidx * per_lane + i] = frag[i]
        cute.copy(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype), frag, dst_g)

    @cute.jit
    def run(a: cute.Tensor, regs: cute.Tensor, back: cute.Tensor):
        kernel(a, regs, back).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return run, elems


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_lane_mapping(num, trans):
    run, elems = _ldmatrix_kernel(warp.LdMatrix8x8x16bOp(transpose=trans, num_matrices=num), cutlass.Float16, num,
                                  2 * num)
    a = (np.arange(elems) % 2048).astype(np.float16)
    regs = np.zeros(32 * 2 * num, np.float16)
    back = np.zeros(elems, np.float16)
    cute.compile(run, a, regs, back, options=CPU)(a, regs, back)
    want = ldmatrix_model(a.reshape(num, 8, 8), trans)
    np.testing.assert_array_equal(regs.reshape(32, 2 * num), want)
    # Through the atom's destination layout each value returns to where it came from.
    np.testing.assert_array_equal(back, a)
