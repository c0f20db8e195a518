"""`cute.nvgpu.tcgen05.copy`: tensor-memory loads and stores (tcgen05.ld / tcgen05.st). The atoms'
tables and the copies are C++ (`cpp/src/cute/atom/copy_sm100.cpp`). The shared-to-tensor-memory
copies (tcgen05.cp) have names only for now."""
import enum

from .... import _core
from ._unavailable import UnavailableOp
from .mma import CtaGroup


class Repetition(enum.Enum):
    """How many times the shape repeats along the columns (.x1 ... .x128)."""
    x1 = 1
    x2 = 2
    x4 = 4
    x8 = 8
    x16 = 16
    x32 = 32
    x64 = 64
    x128 = 128


class Pack(enum.Enum):
    """.pack::16b: two 16-bit values from adjacent columns in one register."""
    NONE = "none"
    PACK_16b_IN_32b = "pack_16b_in_32b"


class Unpack(enum.Enum):
    """.unpack::16b: a register's two 16-bit halves to two adjacent columns."""
    NONE = "none"
    UNPACK_32b_IN_16b = "unpack_32b_in_16b"


class _TmemCopyOp:
    _shape = 0
    _store = False

    def __init__(self, repeat=Repetition.x1, pack=None, *, unpack=None):
        if not isinstance(repeat, Repetition):
            raise TypeError(f"{type(self).__name__}: repeat must be a tcgen05.Repetition, got {repeat!r}")
        flag = unpack if unpack is not None else pack
        if self._store and isinstance(flag, Pack) and flag is not Pack.NONE:
            raise TypeError(f"{type(self).__name__}: stores take an Unpack, got {flag!r}")
        self.repeat = repeat
        self.packed = flag in (Pack.PACK_16b_IN_32b, Unpack.UNPACK_32b_IN_16b)
        if self._store:
            self.unpack = Unpack.UNPACK_32b_IN_16b if self.packed else Unpack.NONE
        else:
            self.pack = Pack.PACK_16b_IN_32b if self.packed else Pack.NONE

    def _make_copy_atom(self, dtype, num_bits):
        return _core.sm100.make_tmem_copy_atom(self._shape, self.repeat.value, self.packed, self._store, dtype)

    def __eq__(self, other):
        return type(self) is type(other) and (self.repeat, self.packed) == (other.repeat, other.packed)

    def __hash__(self):
        return hash((type(self).__name__, self.repeat, self.packed))

    def __repr__(self):
        return f"{type(self).__name__}({self.repeat}, packed={self.packed})"


def _op(name, shape, store):
    return type(name, (_TmemCopyOp,), {"_shape": shape, "_store": store, "__module__": __name__})


Ld32x32bOp = _op("Ld32x32bOp", 0, False)
Ld16x64bOp = _op("Ld16x64bOp", 1, False)
Ld16x128bOp = _op("Ld16x128bOp", 2, False)
Ld16x256bOp = _op("Ld16x256bOp", 3, False)
Ld16x32bx2Op = _op("Ld16x32bx2Op", 4, False)
St32x32bOp = _op("St32x32bOp", 0, True)
St16x64bOp = _op("St16x64bOp", 1, True)
St16x128bOp = _op("St16x128bOp", 2, True)
St16x256bOp = _op("St16x256bOp", 3, True)
St16x32bx2Op = _op("St16x32bx2Op", 4, True)


class _S2TCopyOp(UnavailableOp):
    pass


Cp128x256bOp = type("Cp128x256bOp", (_S2TCopyOp,), {})
Cp128x128bOp = type("Cp128x128bOp", (_S2TCopyOp,), {})
Cp4x256bOp = type("Cp4x256bOp", (_S2TCopyOp,), {})
Cp2x64x128bOp = type("Cp2x64x128bOp", (_S2TCopyOp,), {})


class Cp4x32x128bOp:
    """tcgen05.cp .32x128b.warpx4: 32 rows of 128 bits from shared memory (a descriptor) to 32
    tensor-memory lanes, copied to all four 32-lane subpartitions (the scale factors of the
    block-scaled MMAs). One thread's instruction; the table and checks are C++."""
    _shape = 5

    def __init__(self, cta_group):
        if not isinstance(cta_group, CtaGroup):
            raise TypeError(f"Cp4x32x128bOp: cta_group must be a tcgen05.CtaGroup, got {cta_group!r}")
        self.cta_group = cta_group

    def _make_copy_atom(self, dtype, num_bits):
        return _core.sm100.make_s2t_copy_atom(self._shape, self.cta_group.value, dtype)

    def __eq__(self, other):
        return type(self) is type(other) and self.cta_group == other.cta_group

    def __hash__(self):
        return hash((type(self).__name__, self.cta_group))

    def __repr__(self):
        return f"Cp4x32x128bOp({self.cta_group})"


def make_tmem_copy(atom, tmem_tensor, *, loc=None, ip=None):
    """The tiled copy of a tcgen05.ld / st atom over the four warps of a warpgroup, each warp on
    its own 32 lanes of `tmem_tensor` (CuTe's make_tmem_copy)."""
    return _core.sm100.make_tmem_copy(atom, tmem_tensor)


def is_tmem_load(atom):
    return _core.sm100.is_tmem_load(atom)


def is_tmem_store(atom):
    return _core.sm100.is_tmem_store(atom)


def get_tmem_copy_properties(atom, *, loc=None, ip=None):
    """(data paths, bits per lane per repetition, repetitions, Pack / Unpack) of a tcgen05.ld / st
    atom, e.g. (32, 32, 16, Pack.NONE) for Ld32x32bOp(Repetition.x16)."""
    dp, bits, rep, packed = _core.sm100.tmem_copy_properties(atom)
    if is_tmem_load(atom):
        return dp, bits, rep, Pack.PACK_16b_IN_32b if packed else Pack.NONE
    return dp, bits, rep, Unpack.UNPACK_32b_IN_16b if packed else Unpack.NONE


def find_tmem_tensor_col_offset(tmem_tensor, *, loc=None, ip=None):
    """The 32-bit columns `tmem_tensor` spans (its cosize in columns): the column offset where the
    next tensor-memory tensor can start."""
    return _core.sm100.tmem_tensor_columns(tmem_tensor)


def make_s2t_copy(atom, tmem_tensor, *, loc=None, ip=None):
    """The tiled copy of a tcgen05.cp atom over `tmem_tensor` (CuTe's make_utccp_copy): one thread
    (get_slice(0)); partition_S / partition_D give ((ATOM_V, REST_V), rest...)."""
    return _core.sm100.make_s2t_copy(atom, tmem_tensor)


def get_s2t_smem_desc_tensor(tiled_copy, smem_partition, *, loc=None, ip=None):
    """The shared-memory source partition of a tcgen05.cp copy as descriptors, one per atom."""
    return _core.sm100.s2t_smem_desc_tensor(tiled_copy, smem_partition)
