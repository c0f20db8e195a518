"""cpasync.CopyDsmemStoreOp (st.async into another CTA's shared memory): the atom can be made, so kernels
that only copy with it on a path they leave out (split_k == 1) trace; a copy with it is refused
with NOT_SUPPORTED at the user's line until it is implemented."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync

EMU = "--gpu-arch sm_100a --target cpu"


def _host(copy_with_it):
    @cute.kernel
    def kernel(out: cute.Tensor):
        atom = cute.make_copy_atom(cpasync.CopyDsmemStoreOp(), cutlass.Float32)
        val = cute.make_rmem_tensor(cute.make_layout(1), cutlass.Float32)
        val[0] = cutlass.Float32(2.5)
        if cutlass.const_expr(copy_with_it):
            cute.copy(atom, val, out, mbar_ptr=None)
        else:
            out[0] = val[0]

    @cute.jit
    def host(out: cute.Tensor):
        kernel(out).launch(grid=(1, 1, 1), block=(1, 1, 1))

    return host


def test_the_atom_can_be_made_on_a_path_that_never_copies():
    out = np.zeros(1, np.float32)
    cute.compile(_host(False), out, options=EMU)(out)
    assert out[0] == 2.5


def test_a_copy_with_it_is_refused_at_the_users_line():
    out = np.zeros(1, np.float32)
    with pytest.raises(Exception) as e:
        cute.compile(_host(True), out, options=EMU)
    text = str(e.value)
    assert "NOT_SUPPORTED" in text and "CopyDsmemStoreOp()" in text and "test_copy_dsmem_store_op.py" in text
