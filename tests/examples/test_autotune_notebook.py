"""The flow of NVIDIA's `benchmark_autotune` notebook: an elementwise add in the notebook's style,
`@testing.autotune_jit` over a `@cute.jit` function, a call that tunes, `testing.tune` of a
function that `cute.compile`s the autotuned function with chosen parameters, `cute.compile` with
the best parameters, and `testing.benchmark` of the autotuned function. On the CPU emulator with
numpy arrays (results against numpy); the notebook itself, with torch on the GPU, is GPU-marked."""
import json
import os

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.cute.testing as testing
from cutlass._dsl.errors import DSLUserCodeError


@cute.kernel
def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, cC: cute.Tensor, shape: cute.Shape,
               thr_layout: cute.Layout, val_layout: cute.Layout):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    blk_coord = ((None, None), bidx)
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), gA.element_type)
    thr_copy = cute.make_tiled_copy_tv(atom, thr_layout, val_layout).get_slice(tidx)
    thrA = thr_copy.partition_S(gA[blk_coord])
    thrB = thr_copy.partition_S(gB[blk_coord])
    thrC = thr_copy.partition_S(gC[blk_coord])
    thrCrd = thr_copy.partition_S(cC[blk_coord])
    frgA = cute.make_fragment_like(thrA)
    frgB = cute.make_fragment_like(thrB)
    frgC = cute.make_fragment_like(thrC)
    frgPred = cute.make_rmem_tensor(thrCrd.shape, cutlass.Boolean)
    for i in range(0, cute.size(frgPred), 1):
        frgPred[i] = cute.elem_less(thrCrd[i], shape)
    cute.copy(atom, thrA, frgA, pred=frgPred)
    cute.copy(atom, thrB, frgB, pred=frgPred)
    frgC.store(frgA.load() + frgB.load())
    cute.copy(atom, frgC, thrC, pred=frgPred)


COMPILED_BITS = []  # the copy_bits each trace was made with


def _add_host(mA, mB, mC, M, N, copy_bits: cutlass.Constexpr = 128):
    COMPILED_BITS.append(copy_bits)
    vector_size = copy_bits // mA.element_type.width
    thr_layout = cute.make_ordered_layout((4, 32), order=(1, 0))
    val_layout = cute.make_ordered_layout((4, vector_size), order=(1, 0))
    tiler_mn, tv_layout = cute.make_layout_tv(thr_layout, val_layout)
    gA = cute.zipped_divide(mA, tiler_mn)
    gB = cute.zipped_divide(mB, tiler_mn)
    gC = cute.zipped_divide(mC, tiler_mn)
    cC = cute.zipped_divide(cute.make_identity_tensor(mC.shape), tiler=tiler_mn)
    add_kernel(gA, gB, gC, cC, mC.shape, thr_layout, val_layout).launch(
        grid=[cute.size(gC, mode=[1]), 1, 1], block=[cute.size(tv_layout, mode=[0]), 1, 1])


add_autotune = testing.autotune_jit(params_dict={"copy_bits": [64, 128]}, update_on_change=["M", "N"],
                                    warmup_iterations=0, iterations=1)(cute.jit(_add_host))

M, N = 6, 150  # not a multiple of either tile: the predicates matter


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = rng.standard_normal((M, N)).astype(np.float32)
    return a, b, np.zeros_like(a)


def test_an_autotuned_call_tunes_and_adds():
    a, b, c = _inputs()
    del COMPILED_BITS[:]
    add_autotune(a, b, c, M, N)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    assert sorted(set(COMPILED_BITS)) == [64, 128]  # both configurations were compiled


def test_compile_of_the_autotuned_function_uses_the_given_parameters():
    a, b, c = _inputs(1)
    del COMPILED_BITS[:]
    compiled = cute.compile(add_autotune, a, b, c, M, N, copy_bits=64)
    assert COMPILED_BITS == [64]
    compiled(a, b, c, M, N)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_compile_of_the_autotuned_function_without_parameters_takes_the_defaults():
    a, b, c = _inputs(2)
    del COMPILED_BITS[:]
    cute.compile(add_autotune, a, b, c, M, N)(a, b, c, M, N)
    assert COMPILED_BITS == [128]
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_the_notebooks_tune_then_compile_with_the_best_parameters():
    a, b, c = _inputs(3)

    def tune_func(a, b, c, M, N, copy_bits=128):
        compiled_func = cute.compile(add_autotune, a, b, c, M, N, copy_bits=copy_bits)
        return lambda: compiled_func(a, b, c, M, N)

    params = testing.tune(tune_func, params_dict={"copy_bits": [64, 128]},
                          kernel_arguments=testing.JitArguments(a, b, c, M, N), warmup_iterations=0, iterations=1)
    assert params in ({"copy_bits": 64}, {"copy_bits": 128})
    c[:] = 0
    compiled_func = cute.compile(add_autotune, a, b, c, M, N, **params)
    compiled_func(a, b, c, M, N)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_benchmark_of_the_autotuned_function_over_workspaces():
    spaces = []

    def generate_kernel_arguments():
        spaces.append(_inputs(10 + len(spaces)))
        return testing.JitArguments(*spaces[-1], M, N)

    t = testing.benchmark(add_autotune, workspace_generator=generate_kernel_arguments, workspace_count=2,
                          warmup_iterations=0, iterations=2)
    assert t > 0
    for a, b, c in spaces:
        np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_compile_of_a_plain_function_still_names_the_missing_decorator():
    with pytest.raises(DSLUserCodeError, match="not decorated with @cute.jit"):
        cute.compile(_add_host, 1, 2, 3, M, N)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOK_CANDIDATES = [os.environ.get("OPENCUTE_NVIDIA_EXAMPLES", ""), os.path.join(ROOT, "..", "shared", "nvidia-examples"),
                       os.path.join(ROOT, "..", "..", "shared", "nvidia-examples")]


@pytest.mark.gpu
def test_the_notebook_runs_as_written_on_the_gpu():
    pytest.importorskip("torch")
    path = next((os.path.join(d, "cute", "notebooks", "benchmark_autotune.ipynb") for d in NOTEBOOK_CANDIDATES
                 if d and os.path.exists(os.path.join(d, "cute", "notebooks", "benchmark_autotune.ipynb"))), None)
    if path is None:
        pytest.skip("NVIDIA's notebooks are not present")
    cells = [c for c in json.load(open(path))["cells"] if c["cell_type"] == "code"]
    scope = {"__name__": "__main__"}
    for cell in cells:  # the notebook checks its own results (torch.testing.assert_close)
        exec(compile("".join(cell["source"]), path, "exec"), scope)
