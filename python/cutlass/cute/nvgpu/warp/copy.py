"""Warp-level copy atoms (`cute.nvgpu.warp`): ldmatrix (SM75+) and stmatrix (SM90). The 32 threads
of a warp cooperate in each call; the atoms' thread-value tables live in C++
(cpp/src/cute/atom/copy_sm80)."""
from .... import _core
from ...._dsl.errors import user_error
from ...tensor import register_copy_op


class _MatrixCopyOp:
    _kind = ""
    _descr = ""

    _unpacks = ()  # the unpack_bits the op implements (None: the plain load)

    def __init__(self, transpose=False, num_matrices=1, unpack_bits=None):
        self.transpose = bool(transpose)
        self.num_matrices = int(num_matrices)
        # The sm_100 unpacking loads (.b8x16.b4x16_p64 / .b6x16_p32) widen packed 4- or 6-bit
        # elements to bytes: LdMatrix8x16x8bOp's unpack_bits=4 is implemented, others are not.
        self.unpack_bits = unpack_bits
        if unpack_bits is not None and unpack_bits not in self._unpacks:
            raise user_error(f"cute.nvgpu.warp.{type(self).__name__}: unpack_bits={unpack_bits} (ldmatrix unpacking "
                             f"sub-byte elements) is not available in OpenCuTe yet", code="NOT_SUPPORTED")

    def __str__(self):
        return f"{self._descr}\n  transpose = {self.transpose}\n  number of matrices = {self.num_matrices}"

    def __repr__(self):
        return f"{type(self).__name__}(transpose={self.transpose}, num_matrices={self.num_matrices})"


class LdMatrix8x8x16bOp(_MatrixCopyOp):
    """ldmatrix .m8n8 .b16: loads 1, 2 or 4 8x8 matrices of 16-bit elements from shared memory."""
    _descr = "8x8 ldmatrix Operation"

    def _make_copy_atom(self, dtype, num_bits):
        return _core.cute.make_ldmatrix_atom(dtype, self.num_matrices, self.transpose, False)


class LdMatrix8x16x8bOp(_MatrixCopyOp):
    """ldmatrix .m8n8 .b16 moving 8-bit elements: each matrix is 8 rows of 16 bytes (an 8x16
    matrix of 8-bit elements); without transpose, as ldmatrix transposes 16-bit elements only.
    unpack_bits=4 (sm_100a / sm_120a): ldmatrix .m8n16 .b8x16.b4x16_p64, each row's 16 packed 4-bit
    elements (its first 8 bytes; the other 8 are padding) widened to a byte each, in the low bits."""
    _descr = "8x16 8-bit ldmatrix Operation"
    _unpacks = (4,)  # ldmatrix .m8n16 .b8x16.b4x16_p64: packed 4-bit elements widened to bytes

    def _make_copy_atom(self, dtype, num_bits):
        return _core.cute.make_ldmatrix_atom(dtype, self.num_matrices, self.transpose, True, self.unpack_bits or 0)


class StMatrix8x8x16bOp(_MatrixCopyOp):
    """stmatrix .m8n8 .b16 (sm_90): stores 1, 2 or 4 8x8 matrices of 16-bit elements to shared memory."""
    _descr = "8x8 stmatrix Operation"

    def _make_copy_atom(self, dtype, num_bits):
        return _core.cute.make_stmatrix_atom(dtype, self.num_matrices, self.transpose)


class LdMatrix16x16x8bOp(_MatrixCopyOp):
    """ldmatrix .m16n16 .trans .b8 (sm_100a): loads 1 or 2 16x16 matrices of 8-bit elements from shared
    memory, transposed (transpose=True is required)."""
    _descr = "16x16 8-bit ldmatrix Operation"

    def _make_copy_atom(self, dtype, num_bits):
        return _core.cute.make_ldmatrix16x16_atom(dtype, self.num_matrices, self.transpose)


class StMatrix16x8x8bOp(_MatrixCopyOp):
    """stmatrix .m16n8 .b8 (sm_100): named so that Blackwell modules import on Hopper; refused when
    made, since OpenCuTe does not generate sm_100 code yet."""
    _descr = "16x8 8-bit stmatrix Operation"

    def _make_copy_atom(self, dtype, num_bits):
        raise _blackwell_only(type(self).__name__)


for _op_class in (LdMatrix8x8x16bOp, LdMatrix8x16x8bOp, LdMatrix16x16x8bOp, StMatrix8x8x16bOp):
    register_copy_op(_op_class.__name__, lambda atom, cls=_op_class: cls(transpose=atom.transpose,
                                                                          num_matrices=atom.num_matrices))


def _blackwell_only(name):
    return user_error(f"cute.nvgpu.warp.{name}: an sm_100 instruction, not available in OpenCuTe yet",
                      code="NOT_SUPPORTED")


__all__ = ["LdMatrix8x8x16bOp", "LdMatrix8x16x8bOp", "LdMatrix16x16x8bOp", "StMatrix8x8x16bOp", "StMatrix16x8x8bOp"]
