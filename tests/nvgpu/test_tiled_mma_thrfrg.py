"""TiledMma._thrfrg_A/B/C (CuTe C++'s thrfrg_A/B/C): a layout of the operand's (M, K) / (N, K) /
(M, N) tile divided into ((ThrV, (Thr_i, Thr_j)), (FrgV, (Rest_i, Rest_j))), which NVIDIA's
mixed-input GEMMs use to shape their scale factors' TMA like A; and tiled_mma.op's operand types.
References: the divisions worked by hand for a 1-CTA 128x128x16 bf16 tcgen05 MMA (one thread, the
whole atom one fragment value mode (128, 16))."""
import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import tcgen05

ARCH = "--target cpu --gpu-arch sm_100a"


def _trace(fn):
    out = []

    @cute.jit
    def run():
        out.append(fn())

    cute.compile(run, options=ARCH)
    return out[0]


def _mma():
    return sm100_utils.make_trivial_tiled_mma(cutlass.BFloat16, tcgen05.OperandMajorMode.MN,
                                              tcgen05.OperandMajorMode.K, cutlass.Float32, tcgen05.CtaGroup.ONE,
                                              (128, 128))


def test_thrfrg_a_of_an_m_major_tile():
    def fn():
        frg = cute.get(_mma()._thrfrg_A(cute.make_layout((128, 64), stride=(1, 128))), mode=[1])
        return str(cute.dice(frg, (1, (1, 1))))
    # (FrgV = (128 M, 16 K), RestM 1, RestK 4): K steps of 16 columns of 128.
    assert _trace(fn) == "((128,16),1,4):((1,128),0,2048)"


def test_thrfrg_a_keeps_broadcast_strides():
    def fn():
        frg = cute.get(_mma()._thrfrg_A(cute.make_layout((128, 64), stride=(1, 0))), mode=[1])
        return str(cute.dice(frg, (1, (1, 1))))
    assert _trace(fn) == "((128,16),1,4):((1,0),0,0)"


def test_thrfrg_c_and_op_types():
    def fn():
        mma = _mma()
        op = mma.op
        return (str(cute.get(mma._thrfrg_C(cute.make_layout((128, 128))), mode=[1])),
                op.a_dtype, op.b_dtype, op.acc_dtype, tuple(op.shape_mnk))
    c, a, b, acc, shape = _trace(fn)
    assert c == "((128,128),(1,1)):((1,128),(0,0))"
    assert (a, b, acc, shape) == (cutlass.BFloat16, cutlass.BFloat16, cutlass.Float32, (128, 128, 16))
