"""cutlass.jax: the XLA FFI custom call of cutlass_call.

Without JAX (CI): the package imports and raises a clear error when used; the C++ handler runs
kernels on the CPU emulator from a call frame built the way XLA builds one, and rejects buffers
the kernel was not compiled for. With JAX's CPU backend: cutlass_call inside jax.jit against
numpy, export with symbolic shapes, sharding over two CPU devices, and the ABI declarations
against jaxlib's own header.
"""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import _core
from cutlass.cute.runtime import make_fake_stream, make_fake_tensor, sym_int

from conftest import ROOT, run_python

# Where the cutlass package this process imported lives (the source tree here, site-packages
# where the package is installed): subprocesses import the same one.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__)))

XLA_F32, XLA_S32 = 11, 4  # XLA_FFI_DataType values


# ---- kernels (module level: the DSL reads their source) ------------------------------------

@cute.kernel
def _axpb_kernel(x: cute.Tensor, y: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    m, n = x.shape
    if i < m * n:
        out[i // n, i % n] = x[i // n, i % n] * 2.0 + y[i // n, i % n]


@cute.jit
def _launch_axpb(stream, x: cute.Tensor, y: cute.Tensor, out: cute.Tensor):
    m, n = x.shape
    _axpb_kernel(x, y, out).launch(grid=((m * n + 63) // 64, 1, 1), block=(64, 1, 1), stream=stream)


@cute.kernel
def _scale_kernel(x: cute.Tensor, out: cute.Tensor, factor: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    m, n = x.shape
    if tidx < n:
        out[bidx, tidx] = x[bidx, tidx] * factor


@cute.jit
def _launch_scale(stream, x: cute.Tensor, out: cute.Tensor, *, factor: cutlass.Constexpr):
    m, n = x.shape
    _scale_kernel(x, out, factor).launch(grid=(m, 1, 1), block=(n, 1, 1), stream=stream)


@cute.kernel
def _sum_list_kernel(xs, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    acc = xs[0][tidx]
    for k in cutlass.range_constexpr(1, len(xs)):
        acc = acc + xs[k][tidx]
    out[tidx] = acc


@cute.jit
def _launch_sum_list(stream, xs, out: cute.Tensor):
    _sum_list_kernel(xs, out).launch(grid=(1, 1, 1), block=(out.shape[0], 1, 1), stream=stream)


@cute.kernel
def _increment_kernel(x: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    x[tidx] = x[tidx] + 1.0


@cute.jit
def _launch_increment(stream, x: cute.Tensor):
    _increment_kernel(x).launch(grid=(1, 1, 1), block=(x.shape[0], 1, 1), stream=stream)


@cute.kernel
def _transpose_copy_kernel(x: cute.Tensor, out: cute.Tensor):
    # A plain copy: x is seen with its modes swapped (TensorSpec(mode=(1, 0))), so x[j, i] is the
    # array's [i, j] and out becomes its transpose.
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    out[bidx, tidx] = x[bidx, tidx]


@cute.jit
def _launch_transpose_copy(stream, x: cute.Tensor, out: cute.Tensor):
    _transpose_copy_kernel(x, out).launch(grid=(out.shape[0], 1, 1), block=(out.shape[1], 1, 1), stream=stream)


# ---- without JAX: the package and the C++ handler ------------------------------------------

def test_cutlass_jax_imports_without_jax_and_fails_clearly_when_used():
    code = textwrap.dedent("""
        import sys
        sys.modules["jax"] = None  # as if JAX were not installed
        import cutlass.jax as cjax
        from cutlass.jax.testing import create_tensor
        spec = cjax.TensorSpec(mode=(1, 0), static=True)
        try:
            cjax.cutlass_call(lambda stream, a, b: None, output_shape_dtype=None)
        except cjax.JaxNotAvailableError as e:
            assert isinstance(e, ImportError)
            print("raised:", e)
        try:
            create_tensor((2, 2))
        except cjax.JaxNotAvailableError:
            print("raised too")
    """)
    rc, out, err = run_python(code, env={"PYTHONPATH": PACKAGE_ROOT})
    assert rc == 0, err
    assert "error[JAX_NOT_AVAILABLE]: cutlass.jax needs JAX" in out and "raised too" in out


def test_tensor_spec_validates_its_fields():
    from cutlass.jax import TensorSpec
    assert TensorSpec(mode=[1, 0]).mode == (1, 0)
    with pytest.raises(ValueError, match="permutation"):
        TensorSpec(mode=(0, 0))
    with pytest.raises(ValueError, match="divisibility"):
        TensorSpec(divisibility=(16, 0))
    with pytest.raises(TypeError, match="static"):
        TensorSpec(static=1)
    assert TensorSpec(mode=(1, 0), divisibility=4) == TensorSpec(mode=(1, 0), divisibility=4)


def _register_axpb(static_shape=None, divisibility=1, n_args=2):
    """_launch_axpb compiled for the emulator the way cutlass_call compiles it: a stream and a
    list of row-major tensors (two operands, one result)."""
    if static_shape:
        m, n = static_shape
        fakes = [make_fake_tensor(cutlass.Float32, (m, n), (n, 1), assumed_align=16) for _ in range(3)]
    else:
        fakes = [make_fake_tensor(cutlass.Float32, (sym_int(divisibility=divisibility), sym_int()),
                                  (sym_int(64), 1), assumed_align=16) for _ in range(3)]

    def entry(stream, tensors):
        _launch_axpb(stream, *tensors)

    from cutlass._dsl.jit import JitFunction
    compiled = cute.compile(JitFunction(entry, preprocess=False), make_fake_stream(), fakes, options="--target cpu")
    buffers = [(False, 0, [0, 1], "input 0"), (False, 1, [0, 1], "input 1"), (True, 0, [0, 1], "output 0")]
    return _core.xla_ffi_register_call(compiled, "axpb", 0, buffers, n_args, 1)


def _aligned(shape, dtype=np.float32):
    """A C-contiguous array whose data is 64-byte aligned (XLA's buffers are)."""
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(n + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off:off + n].view(dtype).reshape(shape)


def _buf(a, dtype=XLA_F32):
    return (a.ctypes.data, dtype, list(a.shape))


def test_handler_runs_the_kernel_on_the_emulator_for_any_shape():
    call = _register_axpb()
    token = _core.xla_ffi_process_token()
    rng = np.random.default_rng(0)
    for shape in [(3, 5), (8, 16), (1, 7)]:
        x, y, out = _aligned(shape), _aligned(shape), _aligned(shape)
        x[...] = rng.standard_normal(shape)
        y[...] = rng.standard_normal(shape)
        _core.xla_ffi_invoke_for_testing("cpu", [_buf(x), _buf(y)], [_buf(out)], call, token)
        np.testing.assert_allclose(out, 2 * x + y, rtol=1e-6)


def test_handler_rejects_buffers_the_kernel_was_not_compiled_for():
    token = _core.xla_ffi_process_token()
    call = _register_axpb(static_shape=(4, 8))
    x, y, out = _aligned((4, 8)), _aligned((4, 8)), _aligned((4, 8))
    _core.xla_ffi_invoke_for_testing("cpu", [_buf(x), _buf(y)], [_buf(out)], call, token)
    bad = _aligned((4, 16))
    with pytest.raises(RuntimeError, match=r"^3: axpb: input 1 has extent 16 in kernel mode 1 but the kernel was "
                                           r"compiled for 8"):
        _core.xla_ffi_invoke_for_testing("cpu", [_buf(x), _buf(bad)], [_buf(out)], call, token)
    with pytest.raises(RuntimeError, match="input 0 has element type int32 but the kernel was compiled for float32"):
        _core.xla_ffi_invoke_for_testing("cpu", [_buf(x, XLA_S32), _buf(y)], [_buf(out)], call, token)
    flat = _aligned((32,))
    with pytest.raises(RuntimeError, match="output 0 has rank 1 but the kernel was compiled for rank 2"):
        _core.xla_ffi_invoke_for_testing("cpu", [_buf(x), _buf(y)], [_buf(flat)], call, token)
    misaligned = _aligned((33,))[1:].reshape(4, 8)
    with pytest.raises(RuntimeError, match="input 0 is not aligned to the 16 bytes the kernel assumes"):
        _core.xla_ffi_invoke_for_testing("cpu", [_buf(misaligned), _buf(y)], [_buf(out)], call, token)
    with pytest.raises(RuntimeError, match="2 operands and 1 results, but the kernel was registered for 2 and 1|"
                                           "has 1 operands"):
        _core.xla_ffi_invoke_for_testing("cpu", [_buf(x)], [_buf(out)], call, token)
    with pytest.raises(RuntimeError, match="compiled for the CPU emulator but runs in a GPU computation"):
        _core.xla_ffi_invoke_for_testing("gpu", [_buf(x), _buf(y)], [_buf(out)], call, token)
    with pytest.raises(RuntimeError, match=r"^9: this OpenCuTe custom call was compiled in another process"):
        _core.xla_ffi_invoke_for_testing("cpu", [_buf(x), _buf(y)], [_buf(out)], call, token + 1)
    with pytest.raises(RuntimeError, match="no OpenCuTe custom call is registered as #123456"):
        _core.xla_ffi_invoke_for_testing("cpu", [_buf(x), _buf(y)], [_buf(out)], 123456, token)
    np.testing.assert_array_equal(out, 2 * x + y)  # the rejected calls wrote nothing


def test_handler_checks_the_divisibility_the_kernel_assumes():
    token = _core.xla_ffi_process_token()
    call = _register_axpb(divisibility=4)
    x, y, out = _aligned((8, 3)), _aligned((8, 3)), _aligned((8, 3))
    x[...] = 1.0
    _core.xla_ffi_invoke_for_testing("cpu", [_buf(x), _buf(y)], [_buf(out)], call, token)
    np.testing.assert_array_equal(out, 2.0)
    x6, y6, out6 = _aligned((6, 3)), _aligned((6, 3)), _aligned((6, 3))
    with pytest.raises(RuntimeError, match="input 0 has extent 6 in kernel mode 0, which the kernel assumes "
                                           "divisible by 4"):
        _core.xla_ffi_invoke_for_testing("cpu", [_buf(x6), _buf(y6)], [_buf(out6)], call, token)


def test_handler_rebuilds_a_call_traced_in_another_process_from_its_attributes():
    """A deserialized jax.export from another process carries another token: the handler rebuilds
    the compiled function from the program and buffers attributes (once), and runs it."""
    import base64
    from cutlass.jax.call import _register
    token = _core.xla_ffi_process_token()
    call = _register_axpb()
    from cutlass._dsl.jit import JitFunction

    def entry(stream, tensors):
        _launch_axpb(stream, *tensors)

    fakes = [make_fake_tensor(cutlass.Float32, (sym_int(), sym_int()), (sym_int(64), 1), assumed_align=16)
             for _ in range(3)]
    compiled = cute.compile(JitFunction(entry, preprocess=False), make_fake_stream(), fakes, options="--target cpu")
    buffers = [(False, 0, [0, 1], "input 0"), (False, 1, [0, 1], "input 1"), (True, 0, [0, 1], "output 0")]
    attrs = _register(compiled, "axpb", buffers, 2, 1)
    assert attrs["opencute_buffers"] == "0:0:0.1:input 0|0:1:0.1:input 1|1:0:0.1:output 0"
    assert base64.b64decode(attrs["opencute_program"]) == compiled._export_blob("axpb")
    x, y, out = _aligned((5, 4)), _aligned((5, 4)), _aligned((5, 4))
    x[...] = np.arange(20).reshape(5, 4)
    y[...] = 1.0
    for _ in range(2):  # rebuilt once, then found by content
        out[...] = 0
        _core.xla_ffi_invoke_for_testing("cpu", [_buf(x), _buf(y)], [_buf(out)], 999999, token + 1,
                                         attrs["opencute_program"], attrs["opencute_buffers"])
        np.testing.assert_array_equal(out, 2 * x + 1)
    with pytest.raises(RuntimeError, match="the program attribute is not base64"):
        _core.xla_ffi_invoke_for_testing("cpu", [_buf(x), _buf(y)], [_buf(out)], 0, token + 1, "not base64!",
                                         attrs["opencute_buffers"])
    with pytest.raises(RuntimeError, match="compiled in another process and carries no program"):
        _core.xla_ffi_invoke_for_testing("cpu", [_buf(x), _buf(y)], [_buf(out)], call, token + 1)


# ---- with JAX's CPU backend ----------------------------------------------------------------

def _jax():
    jax = pytest.importorskip("jax")
    return jax


def test_cutlass_call_in_jit_matches_numpy_for_dynamic_and_static_layouts():
    jax = _jax()
    import jax.numpy as jnp
    import cutlass.jax as cjax

    def f(x, y, static):
        call = cjax.cutlass_call(_launch_axpb, output_shape_dtype=jax.ShapeDtypeStruct(x.shape, x.dtype),
                                 use_static_tensors=static)
        return call(x, y)

    rng = np.random.default_rng(1)
    for static in (False, True):
        g = jax.jit(f, static_argnums=2)
        for shape in [(4, 16), (3, 7)]:
            x = rng.standard_normal(shape).astype(np.float32)
            y = rng.standard_normal(shape).astype(np.float32)
            np.testing.assert_allclose(np.asarray(g(jnp.asarray(x), jnp.asarray(y), static)), 2 * x + y, rtol=1e-6)


def test_cutlass_call_static_kwargs_list_inputs_and_modes():
    jax = _jax()
    import jax.numpy as jnp
    import cutlass.jax as cjax
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    @jax.jit
    def scaled(a):
        return cjax.cutlass_call(_launch_scale, output_shape_dtype=a, factor=3.0)(a)

    np.testing.assert_array_equal(np.asarray(scaled(jnp.asarray(x))), 3 * x)

    xs = [np.full((8,), k + 1, np.float32) for k in range(3)]

    @jax.jit
    def summed(arrays):
        return cjax.cutlass_call(_launch_sum_list, output_shape_dtype=jax.ShapeDtypeStruct((8,), jnp.float32))(arrays)

    np.testing.assert_array_equal(np.asarray(summed([jnp.asarray(a) for a in xs])), np.full((8,), 6, np.float32))

    @jax.jit
    def transposed(a):
        out = jax.ShapeDtypeStruct((a.shape[1], a.shape[0]), a.dtype)
        return cjax.cutlass_call(_launch_transpose_copy, output_shape_dtype=out,
                                 input_spec=cjax.TensorSpec(mode=(1, 0)))(a)

    np.testing.assert_array_equal(np.asarray(transposed(jnp.asarray(x))), x.T)


def test_cutlass_call_aliases_write_into_the_input_buffer():
    jax = _jax()
    import jax.numpy as jnp
    import cutlass.jax as cjax

    @jax.jit
    def incremented(a):
        call = cjax.cutlass_call(lambda stream, a: _launch_increment(stream, a), output_shape_dtype=a,
                                 input_output_aliases={0: 0})
        return call(a) * 10.0

    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(incremented(jnp.asarray(x))), (x + 1) * 10)


def test_cutlass_call_compiles_once_per_shape_signature():
    jax = _jax()
    import jax.numpy as jnp
    import cutlass.jax as cjax
    from cutlass.jax import call as call_module

    def f(x, y):
        return cjax.cutlass_call(_launch_axpb, output_shape_dtype=x)(x, y)

    before = len(call_module._cache)
    for shape in [(4, 4), (5, 6), (4, 4)]:  # dynamic layouts: one compilation for every shape
        out = jax.jit(f)(jnp.ones(shape, jnp.float16), jnp.ones(shape, jnp.float16))  # float16: a new signature
        np.testing.assert_array_equal(np.asarray(out), np.full(shape, 3, np.float16))
    assert len(call_module._cache) == before + 1


def test_cutlass_call_rejects_bad_arguments_at_trace_time():
    jax = _jax()
    import jax.numpy as jnp
    import cutlass.jax as cjax
    a = jnp.ones((4, 4))
    with pytest.raises(cutlass.DSLUserCodeError, match="input_spec has 1 entries but the call has 2 arrays"):
        cjax.cutlass_call(_launch_axpb, output_shape_dtype=a, input_spec=[cjax.TensorSpec()])(a, a)
    with pytest.raises(cutlass.DSLUserCodeError, match=r"input_output_aliases \{0: 0\}: input \(4, 4\) float32 and "
                                                       r"output \(2, 2\)"):
        cjax.cutlass_call(_launch_increment, output_shape_dtype=jax.ShapeDtypeStruct((2, 2), jnp.float32),
                          input_output_aliases={0: 0})(a)
    with pytest.raises(cutlass.DSLUserCodeError, match="TensorSpec mode \\(0,\\) does not match the array's rank 2"):
        cjax.cutlass_call(_launch_axpb, output_shape_dtype=a, input_spec=cjax.TensorSpec(mode=(0,)))(a, a)
    with pytest.raises(cutlass.DSLUserCodeError, match="not divisible by 3"):
        cjax.cutlass_call(_launch_axpb, output_shape_dtype=a, use_static_tensors=True,
                          input_spec=cjax.TensorSpec(divisibility=3))(a, a)


def test_export_with_symbolic_shapes_runs_for_new_shapes():
    jax = _jax()
    import jax.numpy as jnp
    from jax import export
    import cutlass.jax as cjax

    def f(x, y):
        return cjax.cutlass_call(_launch_axpb, output_shape_dtype=x, input_spec=cjax.TensorSpec(divisibility=(2, 1)),
                                 output_spec=cjax.TensorSpec(divisibility=(2, 1)))(x, y)

    m, n = export.symbolic_shape("2*m, n")
    spec = jax.ShapeDtypeStruct((m, n), jnp.float32)
    exported = export.export(jax.jit(f), disabled_checks=cjax.get_export_disabled_safety_checks())(spec, spec)
    assert cjax.CUSTOM_CALL_TARGET in exported.mlir_module()
    for shape in [(2, 3), (6, 5)]:
        x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(np.asarray(exported.call(jnp.asarray(x), jnp.asarray(x))), 3 * x, rtol=1e-6)
    with pytest.raises(cutlass.DSLUserCodeError, match="a static tensor needs concrete extents"):
        export.export(jax.jit(lambda x: cjax.cutlass_call(_launch_increment, output_shape_dtype=x,
                                                          use_static_tensors=True, input_output_aliases={0: 0})(x)),
                      disabled_checks=cjax.get_export_disabled_safety_checks())(
            jax.ShapeDtypeStruct(export.symbolic_shape("k"), jnp.float32))


def test_serialized_export_runs_in_a_fresh_process(tmp_path):
    """jax.export's serialized computation runs in another process that imports cutlass.jax (the
    custom call carries the compiled program)."""
    _jax()
    pytest.importorskip("flatbuffers")  # jax.export's serialization
    blob = tmp_path / "exported.bin"
    export_code = textwrap.dedent(f"""
        import numpy as np, jax, jax.numpy as jnp
        from jax import export
        import cutlass.jax as cjax
        from test_jax import _launch_axpb
        f = jax.jit(lambda x, y: cjax.cutlass_call(_launch_axpb, output_shape_dtype=x)(x, y))
        n, = export.symbolic_shape("n")
        spec = jax.ShapeDtypeStruct((n, 8), jnp.float32)
        exp = export.export(f, disabled_checks=cjax.get_export_disabled_safety_checks())(spec, spec)
        open({str(blob)!r}, "wb").write(exp.serialize())
    """)
    run_code = textwrap.dedent(f"""
        import numpy as np, jax, jax.numpy as jnp
        from jax import export
        import cutlass.jax  # registers the custom call's handler
        exp = export.deserialize(bytearray(open({str(blob)!r}, "rb").read()))
        x = np.arange(24, dtype=np.float32).reshape(3, 8)
        out = exp.call(jnp.asarray(x), jnp.ones((3, 8), jnp.float32))
        np.testing.assert_array_equal(np.asarray(out), 2 * x + 1)
        print("fresh process ok")
    """)
    env = {"PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.abspath(__file__)), os.path.join(ROOT, "tests"),
                                       os.environ.get("PYTHONPATH", "")])}
    rc, out, err = run_python(export_code, env=env)
    assert rc == 0, err
    rc, out, err = run_python(run_code, env=env)
    assert rc == 0, err
    assert "fresh process ok" in out


def test_dtype_mapping_and_create_tensor():
    jax = _jax()
    import jax.numpy as jnp
    import cutlass.jax as cjax
    from cutlass.jax.testing import create_tensor
    assert cjax.cutlass_to_jax_dtype(cutlass.Float32) is jnp.float32
    assert cjax.cutlass_to_jax_dtype(cutlass.BFloat16) is jnp.bfloat16
    assert cjax.cutlass_to_jax_dtype(cutlass.Boolean) is jnp.bool_
    assert cjax.jax_to_cutlass_dtype(jnp.float16) is cutlass.Float16
    t = create_tensor((64, 32), jnp.bfloat16, jax.random.key(3))
    assert t.shape == (64, 32) and t.dtype == jnp.bfloat16
    assert 0.5 < float(jnp.std(t.astype(jnp.float32))) < 1.5  # standard normal values
    i = create_tensor((100,), jnp.int8, jax.random.key(4))
    assert i.dtype == jnp.int8 and int(jnp.max(jnp.abs(i.astype(jnp.int32)))) <= 64


def test_shard_map_over_two_cpu_devices():
    _jax()
    code = textwrap.dedent("""
        import numpy as np, jax, jax.numpy as jnp
        from functools import partial
        from jax.sharding import PartitionSpec as P
        import cutlass.jax as cjax
        from test_jax import _launch_axpb
        assert jax.device_count() == 2
        mesh = jax.make_mesh((2,), ("b",))

        @jax.jit
        def f(x, y):
            @partial(jax.shard_map, mesh=mesh, in_specs=(P("b"), P("b")), out_specs=P("b"))
            def body(xb, yb):
                return cjax.cutlass_call(_launch_axpb, output_shape_dtype=xb)(xb, yb)
            return body(x, y)

        x = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
        rows = jax.sharding.NamedSharding(mesh, P("b"))
        out = f(jax.device_put(x, rows), jax.device_put(np.ones_like(x), rows))
        assert len(out.sharding.device_set) == 2
        np.testing.assert_array_equal(np.asarray(out), 2 * x + 1)
        print("sharded ok")
    """)
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.abspath(__file__)), os.path.join(ROOT, "tests"),
                                       os.environ.get("PYTHONPATH", "")])}
    rc, out, err = run_python(code, env=env)
    assert rc == 0, err
    assert "sharded ok" in out


def test_xla_ffi_abi_declarations_match_jaxlibs_header(tmp_path):
    jax = _jax()
    compiler = shutil.which("g++") or shutil.which("c++")
    if not compiler:
        pytest.skip("no C++ compiler")
    exe = tmp_path / "abi_check"
    subprocess.run([compiler, "-std=c++17", "-I", jax.ffi.include_dir(), "-I", os.path.join(ROOT, "cpp", "src"),
                    os.path.join(ROOT, "tests", "interop", "xla_ffi_abi_check.cpp"), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out.count("\n") >= 25
    assert "MISMATCH" not in out, out


# ---- TVM-FFI functions called from JAX through jax-tvm-ffi (NVIDIA's tvm_ffi/*_in_jax.py) ----

@cute.kernel
def _device_add_one(a: cute.Tensor, b: cute.Tensor):
    for i in range(a.shape[0]):
        b[i] = a[i] + 1


@cute.jit
def _add_one(a: cute.Tensor, b: cute.Tensor):
    _device_add_one(a, b).launch(grid=(1, 1, 1), block=(1, 1, 1))


def _jax_tvm_ffi():
    _jax()
    pytest.importorskip("tvm_ffi")
    return pytest.importorskip("jax_tvm_ffi")


def test_tvm_ffi_function_of_jax_arrays_registered_with_jax_tvm_ffi():
    jax_tvm_ffi = _jax_tvm_ffi()
    import jax
    import jax.numpy as jnp
    from cutlass.cute.runtime import from_dlpack
    cpu = jax.devices("cpu")[0]
    a = jax.device_put(jnp.arange(10, dtype=jnp.float32), cpu)
    a_cute = from_dlpack(a, enable_tvm_ffi=True).mark_layout_dynamic()  # a jax.Array, as NVIDIA's example
    b_cute = from_dlpack(jax.device_put(jnp.zeros(10, jnp.float32), cpu), enable_tvm_ffi=True).mark_layout_dynamic()
    compiled = cute.compile(_add_one, a_cute, b_cute, options="--enable-tvm-ffi --target cpu")
    jax_tvm_ffi.register_ffi_target("opencute_test_add_one", compiled, platform="cpu")
    call = jax.ffi.ffi_call("opencute_test_add_one", jax.ShapeDtypeStruct((7,), jnp.float32))
    with jax.default_device(cpu):  # a CPU computation also where JAX has a GPU
        x = jnp.arange(7, dtype=jnp.float32) * 3
        np.testing.assert_array_equal(np.asarray(jax.jit(lambda v: call(v) * 2)(x)), (np.arange(7) * 3 + 1) * 2)


def _export_add_one(tmp_path, options):
    from cutlass.cute.runtime import from_dlpack
    x = np.zeros(10, np.float32)
    compiled = cute.compile(_add_one, from_dlpack(x).mark_layout_dynamic(), from_dlpack(x).mark_layout_dynamic(),
                            options=options)
    compiled.export_to_c(str(tmp_path / "add_one.o"), function_name="add_one")
    libs = cute.runtime.find_runtime_libraries(enable_tvm_ffi=True)
    subprocess.run([os.environ.get("CC", "cc"), "-shared", "-o", str(tmp_path / "add_one.so"),
                    str(tmp_path / "add_one.o"), *libs], check=True)
    return cute.runtime.load_module(str(tmp_path / "add_one.so"), enable_tvm_ffi=True)


def test_exported_tvm_ffi_library_is_called_through_tvm_ffi_by_jax_tvm_ffi(tmp_path):
    """load_module(enable_tvm_ffi=True) of a shared library hands jax_tvm_ffi the library's own
    TVM-FFI function. The exported runtime has no CPU emulator, so on the CPU the call reaches
    the function's argument checks, which refuse the CPU buffer by name (see the GPU test)."""
    jax_tvm_ffi = _jax_tvm_ffi()
    import jax
    import jax.numpy as jnp
    module = _export_add_one(tmp_path, "--enable-tvm-ffi --target cpu")
    jax_tvm_ffi.register_ffi_target("opencute_test_add_one_aot_cpu", module.add_one, platform="cpu")
    a = jax.device_put(jnp.arange(10, dtype=jnp.float32), jax.devices("cpu")[0])
    with pytest.raises(Exception, match="Mismatched Tensor device on argument #0 \\(a\\) when calling `add_one`"):
        jax.ffi.ffi_call("opencute_test_add_one_aot_cpu", jax.ShapeDtypeStruct(a.shape, a.dtype))(a).block_until_ready()
    with pytest.raises(TypeError, match="not loaded from a shared library"):
        cute.runtime.load_module(str(tmp_path / "add_one.o"), enable_tvm_ffi=True).add_one.__tvm_ffi_object__()


@pytest.mark.gpu
def test_exported_tvm_ffi_library_runs_in_a_jax_gpu_computation(tmp_path):
    jax_tvm_ffi = _jax_tvm_ffi()
    import jax
    import jax.numpy as jnp
    if jax.default_backend() != "gpu":
        pytest.skip("JAX has no GPU backend here")
    module = _export_add_one(tmp_path, "--enable-tvm-ffi")
    jax_tvm_ffi.register_ffi_target("opencute_test_add_one_aot_gpu", module.add_one, platform="gpu")
    a = jnp.arange(10, dtype=jnp.float32)
    b = jax.ffi.ffi_call("opencute_test_add_one_aot_gpu", jax.ShapeDtypeStruct(a.shape, a.dtype))(a)
    np.testing.assert_array_equal(np.asarray(b), np.arange(10) + 1)
