"""`cutlass.torch`: helpers between torch tensors and the CuTe DSL. torch is imported on first
use, so `import cutlass` (and importing this module) never needs it."""
import enum
from dataclasses import dataclass

from . import _core
from ._dsl.numeric import NumericMeta
from .cuda import make_stream
from .cute.runtime import from_dlpack  # noqa: F401 - examples call cutlass.torch.from_dlpack


def _torch():
    import torch
    return torch


# cutlass types whose torch dtype is not their lowercased name.
_SPECIAL_NAMES = {"Boolean": "bool", "TFloat32": "float32", "Float8E4M3FN": "float8_e4m3fn",
                  "Float8E5M2": "float8_e5m2", "Float8E8M0FNU": "float8_e8m0fnu", "Float4E2M1FN": "float4_e2m1fn_x2"}


def dtype(ty):
    """The torch dtype of a cutlass numeric type (`Float16` -> `torch.float16`)."""
    if not isinstance(ty, NumericMeta):
        raise TypeError(f"{ty!r} is not a cutlass numeric type")
    name = _SPECIAL_NAMES.get(ty.__name__, ty.__name__.lower())
    result = getattr(_torch(), name, None)
    if result is None or not isinstance(result, _torch().dtype):
        raise TypeError(f"{ty} is not supported by torch")
    return result


def current_stream():
    """torch's current CUDA stream as a CUstream."""
    return make_stream(_torch().cuda.current_stream().cuda_stream)


def default_stream():
    return make_stream(_torch().cuda.default_stream().cuda_stream)


class TensorInitType(enum.Enum):
    SKIP = "skip"
    SCALAR = "scalar"
    RANDOM = "random"
    GAUSSIAN = "gaussian"


@dataclass
class ScalarInitConfig:
    value: float = 0.0


@dataclass
class RandomInitConfig:
    min_val: int = -2
    max_val: int = 2


@dataclass
class GaussianInitConfig:
    mean: float = 0.0
    std: float = 1.0
    scale: float = 1.0


def create_and_permute_torch_tensor(shape, dtype, permute_order=None, init_type=TensorInitType.RANDOM,
                                    init_config=None, device=None):
    """A tensor of `shape` filled per `init_type` (RANDOM: integers in [min_val, max_val)),
    permuted by `permute_order`, then cast to `dtype` keeping the permuted strides."""
    torch = _torch()
    if init_type == TensorInitType.SKIP:
        t = torch.empty(*shape, dtype=torch.float32)
    elif init_type == TensorInitType.SCALAR:
        t = torch.full(tuple(shape), (init_config or ScalarInitConfig()).value, dtype=torch.float32)
    elif init_type == TensorInitType.RANDOM:
        cfg = init_config or RandomInitConfig()
        t = torch.randint(int(cfg.min_val), int(cfg.max_val), tuple(shape), dtype=torch.int32)
    elif init_type == TensorInitType.GAUSSIAN:
        cfg = init_config or GaussianInitConfig()
        t = torch.normal(cfg.mean, cfg.std, tuple(shape), dtype=torch.float32) * cfg.scale
    else:
        raise ValueError(f"unknown init_type {init_type!r}")
    if permute_order is not None:
        t = t.permute(*permute_order)
    t = t.to(dtype=dtype)
    return t if device is None else t.to(device=device)


def _storage_dtype(cutlass_dtype):
    """What holds `cutlass_dtype` data in torch: the type itself, else bytes of the same width.
    Packed 4-bit types get a byte per element, of which the packed values fill the first half
    (the cute tensor keeps the torch tensor's shape and element strides)."""
    torch = _torch()
    if cutlass_dtype.width < 8:
        return torch.uint8
    try:
        return dtype(cutlass_dtype)
    except TypeError:
        if cutlass_dtype.width == 8:
            return torch.uint8
        raise


def matrix(l, mode0, mode1, is_mode0_major, cutlass_dtype, init_type=TensorInitType.RANDOM, init_config=None,
           device=None):
    """A (mode0, mode1, l) tensor whose contiguous mode is mode0 (is_mode0_major) or mode1.
    Types torch cannot compute in (8-bit floats) hold their integer values in int8."""
    torch = _torch()
    shape = (l, mode1, mode0) if is_mode0_major else (l, mode0, mode1)
    order = (2, 1, 0) if is_mode0_major else (1, 2, 0)
    unsigned = cutlass_dtype.is_integer and not cutlass_dtype.signed
    if init_config is None and init_type == TensorInitType.RANDOM:
        init_config = RandomInitConfig(0, 4) if unsigned else RandomInitConfig(-2, 2)
    torch_dtype = torch.int8 if (cutlass_dtype.is_float and cutlass_dtype.width <= 8) else dtype(cutlass_dtype)
    return create_and_permute_torch_tensor(shape, torch_dtype, order, init_type, init_config, device)


def get_leading_dim(tensor):
    """The mode of unit stride, deduced as mark_layout_dynamic does; None when there is none."""
    shape, stride = [int(s) for s in tensor.shape], [int(s) for s in tensor.stride()]
    if all(n == 1 for n in shape):
        # Every mode of extent 1 (amax's (1, 1, 1) accumulator): any of stride 1 will do.
        return next((i for i, st in enumerate(stride) if st == 1), None)
    spec = _core.runtime.TensorSpec(shape, stride, False)
    spec.mark_layout_dynamic(None)
    return None if spec.leading_dim < 0 else spec.leading_dim


def _fill_packed_e2m1(storage, values, cutlass_dtype):
    """`values` as Float4E2M1FN at the storage's element offsets, two to a byte (C++ rounds and
    packs them, _core.runtime.pack_e2m1); the storage holds a byte per element."""
    torch = _torch()
    if cutlass_dtype.__name__ != "Float4E2M1FN":
        raise TypeError(f"{cutlass_dtype.__name__} cannot be filled from torch values (packed 4-bit Float4E2M1FN only)")
    shape, strides = tuple(storage.shape), tuple(storage.stride())
    offsets = torch.zeros(shape, dtype=torch.int64)
    for d, (n, st) in enumerate(zip(shape, strides)):
        offsets += (torch.arange(n, dtype=torch.int64) * st).view([n if i == d else 1 for i in range(len(shape))])
    nbytes = (int(offsets.max()) + 2) // 2 if offsets.numel() else 0
    vals = values.detach().to(device="cpu", dtype=torch.float32).expand(shape).contiguous()
    packed = _core.runtime.pack_e2m1(vals.numpy().tobytes(), offsets.contiguous().numpy().tobytes(), nbytes)
    data = torch.frombuffer(bytearray(packed), dtype=torch.uint8) if nbytes else torch.zeros(0, dtype=torch.uint8)
    storage.as_strided((nbytes,), (1,), storage.storage_offset()).copy_(data.view(storage.dtype).to(storage.device))


def _fill(storage, values, cutlass_dtype):
    if cutlass_dtype.width < 8:
        return _fill_packed_e2m1(storage, values, cutlass_dtype)
    converted = values.to(device=storage.device, dtype=dtype(cutlass_dtype))
    if converted.dtype != storage.dtype:
        converted = converted.view(storage.dtype)  # same width: reinterpret the bits
    storage.copy_(converted)


def convert_cute_tensor(f32_torch_tensor, cute_tensor, dtype, is_dynamic_layout=True, enable_tvm_ffi=False):
    """Fills the storage behind `cute_tensor` with `f32_torch_tensor`'s values converted to
    `dtype`; returns `cute_tensor`."""
    storage = getattr(cute_tensor, "_source", None)
    if storage is None or not hasattr(storage, "copy_"):
        raise TypeError("convert_cute_tensor needs a tensor made by from_dlpack of a torch tensor")
    if tuple(storage.shape) != tuple(f32_torch_tensor.shape):
        raise ValueError(f"shapes differ: {tuple(f32_torch_tensor.shape)} vs {tuple(storage.shape)}")
    _fill(storage, f32_torch_tensor, dtype)
    return cute_tensor


_DEVICE_ALIGN = 256  # bytes: the alignment of cudaMalloc's allocations


def _empty_strided_aligned(torch, shape, stride, dtype, device, align):
    """torch.empty_strided whose data starts on an `align`-byte boundary. GPU allocations are
    256-byte aligned already; host allocations only 64-byte, so a larger `align` (a workspace of
    TMA descriptor slots, assumed_align=128) takes a view at an aligned offset of a larger buffer."""
    storage = torch.empty_strided(shape, stride, dtype=dtype, device=device)
    if align <= 1 or storage.data_ptr() % align == 0:
        return storage
    itemsize = storage.element_size()
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(n > 0 for n in shape) else 0
    raw = torch.empty(span * itemsize + align, dtype=torch.uint8, device=storage.device)
    offset = (-raw.data_ptr()) % align
    flat = raw[offset:offset + span * itemsize].view(dtype)
    return flat.as_strided(shape, stride)


def _packed_integer_4bit_like(data_ref, cutlass_dtype, device):
    """Byte storage of `data_ref`'s values as packed 4-bit integers, two to a byte along its
    stride-1 mode (the first in the low nibble), the other modes in `data_ref`'s order."""
    torch = _torch()
    shape, stride = list(data_ref.shape), list(data_ref.stride())
    lead = [i for i, (n, d) in enumerate(zip(shape, stride)) if d == 1 and n > 1]
    if len(lead) != 1 or shape[lead[0]] % 2:
        raise ValueError(f"{cutlass_dtype} storage packs pairs along one stride-1 mode of even extent; got shape "
                         f"{tuple(shape)}, strides {tuple(stride)}")
    lead = lead[0]
    values = data_ref.to(device="cpu", dtype=torch.int32) & 0xF
    low = values.index_select(lead, torch.arange(0, shape[lead], 2))
    high = values.index_select(lead, torch.arange(1, shape[lead], 2))
    packed = (low | (high << 4)).to(torch.uint8)
    order = sorted(range(len(shape)), key=lambda i: stride[i], reverse=True)  # outermost first
    storage = torch.empty([packed.shape[i] for i in order], dtype=torch.uint8, device=device)
    storage = storage.permute([order.index(i) for i in range(len(shape))])
    storage.copy_(packed)
    return storage


def cute_tensor_like(data_ref, cutlass_dtype, is_dynamic_layout, assumed_align=None, enable_tvm_ffi=False):
    """(cute tensor, torch tensor): new storage of `cutlass_dtype` with `data_ref`'s shape,
    strides and values, on the GPU when there is one. 4-bit integers (Int4) are stored packed two
    to a byte along the stride-1 mode; the torch tensor returned is those bytes."""
    torch = _torch()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if cutlass_dtype.is_integer and cutlass_dtype.width == 4:
        storage = _packed_integer_4bit_like(data_ref, cutlass_dtype, device)
        cute_tensor = from_dlpack(storage, assumed_align=assumed_align)
        cute_tensor.element_type = cutlass_dtype
        if is_dynamic_layout:
            cute_tensor.mark_layout_dynamic(leading_dim=get_leading_dim(data_ref))
        return cute_tensor, storage
    # Host storage starts on a 256-byte boundary as GPU allocations do, so that the tensor can be
    # wrapped again with a larger assumed_align (NVIDIA's mixed-input prefill asks 32, then 128).
    storage = _empty_strided_aligned(torch, tuple(data_ref.shape), tuple(data_ref.stride()),
                                     _storage_dtype(cutlass_dtype), device, max(assumed_align or 0, _DEVICE_ALIGN))
    _fill(storage, data_ref, cutlass_dtype)
    cute_tensor = from_dlpack(storage, assumed_align=assumed_align)
    if cutlass_dtype.width < 8:
        cute_tensor._hold_one_element_per_byte(cutlass_dtype)  # data_ref's shape, a byte per element
    else:
        cute_tensor.element_type = cutlass_dtype
    if is_dynamic_layout:
        cute_tensor.mark_layout_dynamic(leading_dim=get_leading_dim(storage))
    return cute_tensor, storage
