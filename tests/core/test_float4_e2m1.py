"""cutlass.Float4E2M1FN: the 4-bit float (1 sign, 2 exponent, 1 mantissa bit; no inf/nan; max 6)
that torch stores two to a byte as float4_e2m1fn_x2, the first value in the low nibble. DLPack
describes those tensors as (code 17, bits 4, lanes 2) with extents counted in pairs; a compiled
function sees 4-bit elements: the stride-1 mode twice as long, every other stride doubled.
CI has no torch: packed tensors come from numpy bytes, through `element_type` or the testing
DLPack exchange table (`_core._testing_dlpack_exchange_api()`), which reports lanes 2 as torch does."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import _core
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor
import toolchain

F4 = cutlass.Float4E2M1FN
_E2M1_MAGNITUDES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def e2m1_value(code):
    """The value of a 4-bit code from the format: bias 1, subnormal step 0.5."""
    s, e, m = code >> 3, (code >> 1) & 3, code & 1
    v = m * 0.5 if e == 0 else (1 + m / 2) * 2.0 ** (e - 1)
    return -v if s else v


def e2m1_round(x):
    """numpy model of f32 -> e2m1: nearest, ties to the even code, saturating at +-6; NaN -> +-6
    with its sign (OpenCuTe's choice; the format has no NaN)."""
    x = float(np.float32(x))
    mag = 6.0 if np.isnan(x) else min(abs(x), 6.0)
    best = min(range(8), key=lambda c: (abs(_E2M1_MAGNITUDES[c] - mag), c % 2))  # ties: even code
    v = _E2M1_MAGNITUDES[best]
    return -v if np.signbit(x) else v


def test_all_sixteen_codes_decode_as_the_format_says():
    assert [e2m1_value(c) for c in range(8)] == _E2M1_MAGNITUDES
    for code in range(16):
        v = e2m1_value(code)
        # every representable value converts exactly, sign of zero included
        got = F4(v).value
        assert got == v and np.signbit(got) == bool(code & 8), (code, got)


def test_rounding_is_nearest_even_and_saturates():
    ties = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
    assert [F4(t).value for t in ties] == [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0]
    rng = np.random.default_rng(0)
    xs = list(rng.uniform(-8, 8, 300).astype(np.float32)) + ties + [-t for t in ties] + [
        0.2499, 0.2501, 5.0001, 6.0, 6.5, 1e30, -1e30, float("inf"), float("-inf"), 1e-8, -1e-8]
    for x in xs:
        assert F4(float(x)).value == e2m1_round(x), x
    assert F4(float("nan")).value == 6.0 and F4(-float("nan")).value == -6.0


def test_type_properties():
    assert F4.width == 4 and F4.bytes == 1 and F4.is_float and str(F4) == "Float4E2M1FN"
    assert cute.Float4E2M1FN is F4


@cute.kernel
def _print_kernel(t_f4: cute.Tensor, t_uint8: cute.Tensor):
    print("[Compile INFO] Float4E2M1FN:", t_f4)
    print("[Compile INFO] Uint8:", t_uint8)
    print("[Compile INFO] casted:", cute.recast_tensor(t_uint8, cutlass.Float4E2M1FN))


@cute.jit
def _print_info(t_f4: cute.Tensor, t_uint8: cute.Tensor):
    _print_kernel(t_f4, t_uint8).launch(grid=(1, 1, 1), block=(1, 1, 1))


def _fake_pair():
    m, k_f4, k_u8 = cute.sym_int(), cute.sym_int(divisibility=2), cute.sym_int()
    a = make_fake_compact_tensor(F4, (m, k_f4), stride_order=(1, 0), assumed_align=16)
    b = make_fake_compact_tensor(cutlass.Uint8, (m, k_u8), stride_order=(1, 0), assumed_align=16)
    return a, b


def test_fake_fp4_tensors_compile_and_print(capsys):
    # the flow of NVIDIA's cute/tvm_ffi/fp4_x2_tensor.py, compile only
    pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
    cute.compile(_print_info, *_fake_pair(), options="--enable-tvm-ffi")
    out = capsys.readouterr().out
    assert "Float4E2M1FN: tensor<ptr<f4E2M1FN, gmem, align<16>> o (?,?{div=2}):(?{i64 div=2},1)>" in out
    assert "Uint8: tensor<ptr<u8, gmem, align<16>> o (?,?):(?{i64},1)>" in out
    # recast Uint8 -> Float4E2M1FN: twice the elements along the stride-1 mode, strides doubled
    assert "casted: tensor<ptr<f4E2M1FN, gmem, align<16>> o (?,?{div=2}):(?{i64 div=2},1)>" in out


@cute.kernel
def _bytes_kernel(t_f4: cute.Tensor, out: cute.Tensor, row: cute.Tensor, extent: cute.Tensor):
    u = cute.recast_tensor(t_f4, cutlass.Uint8)
    for i in range(u.shape[0]):
        for j in range(u.shape[1]):
            out[i, j] = u[i, j]
    # a row of the fp4 tensor starts a whole number of bytes in: its pointer moves by bytes
    r = cute.recast_tensor(t_f4[(1, None)], cutlass.Uint8)
    for j in range(r.shape[0]):
        row[j] = r[j]
    extent[0] = t_f4.shape[1]
    extent[1] = t_f4.stride[0]


@cute.jit
def _bytes(t_f4: cute.Tensor, out: cute.Tensor, row: cute.Tensor, extent: cute.Tensor):
    _bytes_kernel(t_f4, out, row, extent).launch(grid=(1, 1, 1), block=(1, 1, 1))


def _storage():
    return (np.arange(12, dtype=np.uint8).reshape(3, 4) * 37 + 5).astype(np.uint8)


def test_uint8_storage_viewed_as_fp4_on_the_emulator():
    s = _storage()
    t = from_dlpack(s)
    t.element_type = F4
    assert t.shape == (3, 8) and t.stride == (8, 1)
    out, row, extent = np.zeros((3, 4), np.uint8), np.zeros(4, np.uint8), np.zeros(2, np.int32)
    cute.compile(_bytes, t, from_dlpack(out), from_dlpack(row), from_dlpack(extent), options="--target cpu")(
        t, from_dlpack(out), from_dlpack(row), from_dlpack(extent))
    np.testing.assert_array_equal(out, s)
    np.testing.assert_array_equal(row, s[1])
    assert list(extent) == [8, 8]


class PackedPairs:
    """torch's float4_e2m1fn_x2 over numpy bytes, as the DLPack exchange table reports it."""
    __dlpack_c_exchange_api__ = _core._testing_dlpack_exchange_api()

    def __init__(self, storage):
        self._array = storage
        self._dlpack_view = _core._DLPackView(storage.ctypes.data, list(storage.shape),
                                              [s // storage.itemsize for s in storage.strides], 17, 4, 1, lanes=2)


class Bytes:
    __dlpack_c_exchange_api__ = _core._testing_dlpack_exchange_api()

    def __init__(self, storage, code=1, bits=8):
        self._array = storage
        self._dlpack_view = _core._DLPackView(storage.ctypes.data, list(storage.shape),
                                              [s // storage.itemsize for s in storage.strides], code, bits, 1)


def _compiled_tvm_ffi():
    pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
    a, _ = _fake_pair()
    n = cute.sym_int()
    out = make_fake_compact_tensor(cutlass.Uint8, (cute.sym_int(), n), stride_order=(1, 0))
    row = make_fake_compact_tensor(cutlass.Uint8, (cute.sym_int(),))
    ext = make_fake_compact_tensor(cutlass.Int32, (2,))
    return cute.compile(_bytes, a, out, row, ext, options="--enable-tvm-ffi --target cpu")


def test_tvm_ffi_reads_float4_e2m1fn_x2_pairs_as_elements():
    f = _compiled_tvm_ffi()
    s = _storage()
    out, row, extent = np.zeros((3, 4), np.uint8), np.zeros(4, np.uint8), np.zeros(2, np.int32)
    f(PackedPairs(s), Bytes(out), Bytes(row), Bytes(extent, code=0, bits=32))
    np.testing.assert_array_equal(out, s)
    np.testing.assert_array_equal(row, s[1])
    assert list(extent) == [8, 8]  # 4 pairs per row are 8 elements; a row is 8 elements apart


def test_tvm_ffi_refuses_bytes_for_a_float4_parameter():
    f = _compiled_tvm_ffi()
    s = _storage()
    out, row, extent = np.zeros((3, 4), np.uint8), np.zeros(4, np.uint8), np.zeros(2, np.int32)
    with pytest.raises(TypeError, match=r"Mismatched t_f4.dtype on argument #0 .* expected float4_e2m1fn_x2"):
        f(Bytes(s), Bytes(out), Bytes(row), Bytes(extent, code=0, bits=32))


def test_packed_pairs_need_a_stride_one_mode():
    f = _compiled_tvm_ffi()
    s = np.zeros((4, 6), np.uint8)[:, ::2]  # pairs 2 bytes apart: a row's values are not adjacent
    out, row, extent = np.zeros((4, 3), np.uint8), np.zeros(3, np.uint8), np.zeros(2, np.int32)
    with pytest.raises(ValueError, match="needs a mode of stride 1"):
        f(PackedPairs(s), Bytes(out), Bytes(row), Bytes(extent, code=0, bits=32))


def test_default_abi_reads_exchange_pairs_as_elements():
    s = _storage()
    t = from_dlpack(s)
    t.element_type = F4
    args = [from_dlpack(np.zeros((3, 4), np.uint8)), from_dlpack(np.zeros(4, np.uint8)), from_dlpack(np.zeros(2, np.int32))]
    f = cute.compile(_bytes, t, *args, options="--target cpu")
    out, row, extent = np.zeros((3, 4), np.uint8), np.zeros(4, np.uint8), np.zeros(2, np.int32)
    f(PackedPairs(s), out, row, extent)
    np.testing.assert_array_equal(out, s)
    np.testing.assert_array_equal(row, s[1])


@cute.kernel
def _element_kernel(t_f4: cute.Tensor, out: cute.Tensor):
    out[0] = t_f4[0, 0].to(cutlass.Float32)


@cute.jit
def _element(t_f4: cute.Tensor, out: cute.Tensor):
    _element_kernel(t_f4, out).launch(grid=(1, 1, 1), block=(1, 1, 1))


@cute.kernel
def _odd_offset_kernel(t_f4: cute.Tensor, out: cute.Tensor):
    r = cute.recast_tensor(t_f4[(None, 1)], cutlass.Uint8)  # column 1 starts half a byte in
    out[0] = r[0]


@cute.jit
def _odd_offset(t_f4: cute.Tensor, out: cute.Tensor):
    _odd_offset_kernel(t_f4, out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_single_fp4_elements_and_half_byte_offsets_are_refused():
    t = from_dlpack(_storage())
    t.element_type = F4
    with pytest.raises(cutlass.DSLUserCodeError, match="cannot be accessed alone"):
        cute.compile(_element, t, from_dlpack(np.zeros(1, np.float32)), options="--target cpu")
    with pytest.raises(cutlass.DSLUserCodeError, match="must be a multiple of 2"):
        cute.compile(_odd_offset, t, from_dlpack(np.zeros(1, np.uint8)), options="--target cpu")


def test_element_type_view_needs_bytes():
    t = from_dlpack(np.zeros(4, np.float16))
    with pytest.raises(TypeError, match="widths differ"):
        t.element_type = F4
    t = from_dlpack(np.zeros((2, 4), np.uint8)).mark_layout_dynamic()
    with pytest.raises(TypeError, match="before marking the layout dynamic"):
        t.element_type = F4


@cute.kernel
def _convert_kernel(t_f4: cute.Tensor, out: cute.Tensor, src: cute.Tensor, back: cute.Tensor):
    out.store(t_f4.load().to(cutlass.Float32))     # packed nibbles -> f32
    back.store(src.load().to(cutlass.Float4E2M1FN))  # f32 -> nibbles: nearest even, saturating


@cute.jit
def _convert(t_f4: cute.Tensor, out: cute.Tensor, src: cute.Tensor, back: cute.Tensor):
    _convert_kernel(t_f4, out, src, back).launch(grid=(1, 1, 1), block=(1, 1, 1))


def _fp4_view(storage):
    t = from_dlpack(storage)
    t.element_type = F4
    return t


def _convert_args():
    codes = np.arange(16, dtype=np.uint8) * 17  # byte k holds code k twice: all 16 codes
    ties = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, -0.25, -2.5, -5.0, -100.0, 0.3, 2.7, -1e-3, 6.0]
    src = np.array(ties + list(np.random.default_rng(1).uniform(-7, 7, 16)), np.float32)
    return codes, np.full(32, np.nan, np.float32), src, np.zeros(16, np.uint8)


def test_fp4_vectors_load_convert_and_store_on_the_emulator():
    codes, out, src, back = _convert_args()
    f = cute.compile(_convert, _fp4_view(codes), from_dlpack(out), from_dlpack(src), _fp4_view(back),
                     options="--target cpu")
    f(_fp4_view(codes), from_dlpack(out), from_dlpack(src), _fp4_view(back))
    # element 2k is the low nibble of byte k, element 2k+1 the high one
    np.testing.assert_array_equal(out, [e2m1_value(c) for k in range(16) for c in (k, k)])
    got = [e2m1_value(int(b) >> (4 * h) & 15) for b in back for h in (0, 1)]
    np.testing.assert_array_equal(got, [e2m1_round(x) for x in src])


def test_fp4_conversion_kernel_compiles_to_ptx(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "1")  # a cache hit has no NVVM IR to read
    codes, out, src, back = _convert_args()
    c = cute.compile(_convert, _fp4_view(codes), from_dlpack(out), from_dlpack(src), _fp4_view(back))
    assert "@__opencute_e2m1_from_f32" in c.nvvm_ir and "@__opencute_e2m1_to_f32" in c.nvvm_ir
    toolchain.ptx_of(c)
    assert "e2m1x2" not in c.__ptx__  # the comparison sequence runs on every architecture


@cute.kernel
def _row_major_load_kernel(t_f4: cute.Tensor, out: cute.Tensor):
    out.store(t_f4.load().to(cutlass.Float32))


@cute.jit
def _row_major_load(t_f4: cute.Tensor, out: cute.Tensor):
    _row_major_load_kernel(t_f4, out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_fp4_load_needs_a_unit_stride_first_mode():
    t = _fp4_view(_storage())  # (3,8):(8,1): the first mode steps 8 elements
    with pytest.raises(cutlass.DSLUserCodeError, match="accessed as whole bytes"):
        cute.compile(_row_major_load, t, from_dlpack(np.zeros((3, 8), np.float32)), options="--target cpu")


@cute.kernel
def _print_values_kernel(t_f4: cute.Tensor):
    cute.print_tensor(t_f4)


@cute.jit
def _print_values(t_f4: cute.Tensor):
    _print_values_kernel(t_f4).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_print_tensor_shows_fp4_values(capfd):
    storage = np.array([[0x10, 0x3F], [0xD2, 0x7E]], np.uint8)  # low nibble first
    t = _fp4_view(storage)
    cute.compile(_print_values, t, options="--target cpu")(t)
    out = capfd.readouterr().out
    rows = [[e2m1_value(int(b) >> (4 * h) & 15) for b in r for h in (0, 1)] for r in storage]
    assert rows == [[0.0, 0.5, -6.0, 1.5], [1.0, -3.0, -4.0, 6.0]]
    for r in rows:
        text = ", ".join(f"{v:f}" if np.signbit(v) else f" {v:f}" for v in r)
        assert text in out, (text, out)
    assert "f4E2M1FN" in out


@cute.kernel
def _fragment_kernel(src: cute.Tensor, out: cute.Tensor):
    frag = cute.make_rmem_tensor((16,), cutlass.Float4E2M1FN)  # 8 bytes of registers
    frag.store(src.load().to(cutlass.Float4E2M1FN))
    out.store(frag.load().to(cutlass.Float32))


@cute.jit
def _fragment(src: cute.Tensor, out: cute.Tensor):
    _fragment_kernel(src, out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_fp4_register_fragment_round_trip():
    src = np.linspace(-7, 7, 16).astype(np.float32)
    out = np.full(16, np.nan, np.float32)
    cute.compile(_fragment, from_dlpack(src), from_dlpack(out), options="--target cpu")(from_dlpack(src), from_dlpack(out))
    np.testing.assert_array_equal(out, [e2m1_round(x) for x in src])


@cute.kernel
def _copy_kernel(src: cute.Tensor, dst: cute.Tensor):
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float4E2M1FN, num_bits_per_copy=32)
    cute.copy(atom, src, dst)  # 8 elements (4 bytes) per access


@cute.jit
def _copy(src: cute.Tensor, dst: cute.Tensor):
    _copy_kernel(src, dst).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_fp4_copy_moves_whole_bytes(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "1")

    def view(a):
        t = from_dlpack(a, assumed_align=4)
        t.element_type = F4
        return t

    s, d = (np.arange(16, dtype=np.uint8) * 29).astype(np.uint8), np.zeros(16, np.uint8)
    cute.compile(_copy, view(s), view(d), options="--target cpu")(view(s), view(d))
    np.testing.assert_array_equal(d, s)
    c = cute.compile(_copy, view(s), view(d))
    toolchain.ptx_of(c)  # the accesses are 32-bit
    assert "ld.global.u32" in c.__ptx__ or "ld.global.b32" in c.__ptx__, c.__ptx__


@pytest.mark.gpu
def test_torch_float4_e2m1fn_x2_through_tvm_ffi_on_the_gpu():
    """NVIDIA's cute/tvm_ffi/fp4_x2_tensor.py flow with torch tensors, plus the bytes checked."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("tvm_ffi")
    if not hasattr(torch, "float4_e2m1fn_x2"):
        pytest.skip("this torch has no float4_e2m1fn_x2")
    f = cute.compile(_print_info, *_fake_pair(), options="--enable-tvm-ffi")
    u8 = torch.randint(0, 256, (16, 16), dtype=torch.uint8, device="cuda")
    f(u8.view(torch.float4_e2m1fn_x2), u8)
    torch.cuda.synchronize()
    a, _ = _fake_pair()
    n = cute.sym_int()
    g = cute.compile(_bytes, a, make_fake_compact_tensor(cutlass.Uint8, (cute.sym_int(), n), stride_order=(1, 0)),
                     make_fake_compact_tensor(cutlass.Uint8, (cute.sym_int(),)),
                     make_fake_compact_tensor(cutlass.Int32, (2,)), options="--enable-tvm-ffi")
    out, row, ext = torch.zeros_like(u8), torch.zeros(16, dtype=torch.uint8, device="cuda"), \
        torch.zeros(2, dtype=torch.int32, device="cuda")
    g(u8.view(torch.float4_e2m1fn_x2), out, row, ext)
    torch.cuda.synchronize()
    assert torch.equal(out, u8) and torch.equal(row, u8[1]) and ext.tolist() == [32, 32]
    # the default ABI through from_dlpack: the same bytes
    t = from_dlpack(u8.view(torch.float4_e2m1fn_x2))
    assert t.shape == (16, 32) and t.stride == (32, 1)
