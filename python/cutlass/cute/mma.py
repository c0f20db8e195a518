"""MMA atoms, tiled MMAs and `cute.gemm` (`cute.make_tiled_mma`, `TiledMma.get_slice`,
`ThrMma.partition_A` ...), plus the tiled copies derived from a TiledMma
(`cute.make_tiled_copy_A/B/C`). Thin wrappers: the atoms' tables, partitioning and the gemm
dispatch live in C++ (`cpp/src/cute/atom/`, `cpp/src/cute/algorithm/gemm.cpp`)."""
import copy

from .. import _core
from .arch._tmem import _value, user_line
from .._dsl.errors import user_error

_C = _core.cute

MmaAtom = _C.MmaAtom
TiledMma = _C.TiledMma
ThrMma = _C.ThrMma
for _cls in (MmaAtom, TiledMma, ThrMma):
    _cls.__module__ = "cutlass.cute"

# Copy atoms and tiled copies are compile-time structure: as kernel arguments they flatten to
# no runtime values.
for _cls in (_C.CopyAtom, _C.TiledCopy, _C.ThrCopy):
    _cls.__extract_mlir_values__ = lambda self: []
    _cls.__new_from_mlir_values__ = lambda self, values: self
    _cls.__cute_static__ = True


_SCALE_FACTOR_FIELDS = {"sf_a": 0, "sf_b": 1}


def _field_name(field, settable=False):
    name = getattr(field, "value", field)
    if name != "accum_c" and not (settable and name in _SCALE_FACTOR_FIELDS):
        raise ValueError(f"unknown MMA field {field!r}: the warpgroup MMAs have Field.ACCUMULATE")
    return name


def _mma_set(self, field, value, *, loc=None, ip=None):
    """`atom.set(warpgroup.Field.ACCUMULATE, b)`: the following cute.gemm computes D = A*B + D when
    b is true, D = A*B when false (a Python bool or a Boolean). The block-scaled tcgen05 MMAs also
    take `set(tcgen05.Field.SFA / SFB, tmem_ptr)`: where the following cute.gemm reads the scale
    factors."""
    name = _field_name(field, settable=True)
    if name in _SCALE_FACTOR_FIELDS:
        self._set_scale_factor(_SCALE_FACTOR_FIELDS[name], _value(value))
        return
    self._set_accumulate(value)


def _mma_get(self, field, *, loc=None, ip=None):
    _field_name(field)
    return self._get_accumulate()


for _cls in (MmaAtom, TiledMma):
    _cls.set = _mma_set
    _cls.get = _mma_get


class MmaOp:
    """Base of the MMA operations (`warp.MmaF16BF16Op`, `nvgpu.MmaUniversalOp` ...): an op
    describes one instruction; `make_mma_atom` / `make_tiled_mma` turn it into an atom."""

    def _make_atom(self):
        return self._atom

    def __str__(self):
        return self._atom._op_string

    def __repr__(self):
        return str(self)

    def __eq__(self, other):
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self).__name__,) + self._key())


class MmaUniversalOp(MmaOp):
    """The SIMT "MMA": one thread computes d = a * b + c (`cute.nvgpu.MmaUniversalOp`)."""

    def __init__(self, abacc_dtype):
        self.abacc_dtype = abacc_dtype
        self._atom = _C.make_mma_universal(abacc_dtype)

    def _key(self):
        return (self.abacc_dtype,)


class _OpOfAtom(MmaOp):
    """`tiled_mma.op` / `atom.op`: the operation a tiled MMA or atom performs; make_mma_atom of it
    gives a fresh copy of the atom each time, whose fields (ACCUMULATE) are its own."""

    def __init__(self, atom):
        self._atom = atom

    def _make_atom(self):
        return copy.copy(self._atom)

    def _key(self):
        return (str(self._atom),)

    # The operation's operand types and shape, as the tcgen05 / warpgroup ops carry them
    # (NVIDIA's mixed-input GEMMs size tensor memory by tiled_mma.op.a_dtype).
    a_dtype = property(lambda self: self._atom.a_dtype)
    b_dtype = property(lambda self: self._atom.b_dtype)
    acc_dtype = property(lambda self: self._atom.acc_dtype)
    shape_mnk = property(lambda self: self._atom.shape_mnk)

    # Where A comes from and the operands' major modes, in the enums of the op's own family
    # (FlashAttention-4 builds its tcgen05 instructions from tiled_mma.op.a_src / a_major_mode).
    def _enums(self):
        for prefix, enums in _OPERAND_ENUMS.items():
            if self._atom._op_string.startswith(prefix):
                return enums
        raise AttributeError(f"{self._atom._op_string.splitlines()[0]} has no operand source or major modes")

    @property
    def a_src(self):
        return self._enums()["source"][_enum_name(_core.cute.OperandSource, self._atom._a_source)]

    @property
    def a_major_mode(self):
        return self._enums()["major"][_enum_name(_core.cute.OperandMajor, self._atom._a_major)]

    @property
    def b_major_mode(self):
        return self._enums()["major"][_enum_name(_core.cute.OperandMajor, self._atom._b_major)]

    @property
    def cta_group(self):
        group = self._enums().get("cta_group")
        return group(self._atom._cta_group) if group is not None else None


# An op family's Python enums, by the prefix of its atoms' op string ("tcgen05", "warpgroup"):
# the family's module registers them (it imports this one, not the other way round).
_OPERAND_ENUMS = {}


def register_operand_enums(prefix, source, major, cta_group=None):
    _OPERAND_ENUMS[prefix] = {"source": source, "major": major, "cta_group": cta_group}


def _enum_name(cpp_enum, value):
    return next(n for n, v in cpp_enum.__members__.items() if int(v) == value)


TiledMma.op = property(lambda self: _OpOfAtom(self._atom_copy()))
MmaAtom.op = property(lambda self: _OpOfAtom(copy.copy(self)))


def _atom_of(op_or_atom):
    if isinstance(op_or_atom, (MmaAtom, TiledMma, ThrMma)):
        return op_or_atom
    if isinstance(op_or_atom, MmaOp):
        return op_or_atom._make_atom()
    raise TypeError(f"expected an MMA operation or atom, got {type(op_or_atom).__name__}")


def make_mma_atom(op, *, loc=None, ip=None, **kwargs):
    if not isinstance(op, MmaOp):
        raise TypeError(f"make_mma_atom: expected an MMA operation, got {type(op).__name__}")
    return op._make_atom()


def make_tiled_mma(op_or_atom, atom_layout_mnk=(1, 1, 1), permutation_mnk=None, *, loc=None, ip=None, **kwargs):
    atom = _atom_of(op_or_atom)
    if isinstance(atom, (TiledMma, ThrMma)):
        raise TypeError("make_tiled_mma: expected an MMA operation or atom, got a TiledMma")
    if isinstance(atom_layout_mnk, tuple) and len(atom_layout_mnk) > 3:
        raise ValueError(f"make_tiled_mma: atom_layout_mnk must have rank <= 3, got {atom_layout_mnk}")
    if permutation_mnk is not None and len(permutation_mnk) > 3:
        raise ValueError(f"make_tiled_mma: permutation_mnk must have at most 3 modes, got {permutation_mnk}")
    return _C.make_tiled_mma(atom, atom_layout_mnk, permutation_mnk)


def gemm(atom, d, a, b, c, *, loc=None, ip=None, **kwargs):
    """D <- A * B + C over register fragments (C and D may be the same tensor)."""
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        # [A, SFA], [B, SFB]: a block-scaled MMA with its scale-factor tensors (C++ checks them).
        if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == 2 and len(b) == 2):
            raise user_error("cute.gemm: scale-factor operands come as [A, SFA] and [B, SFB], both pairs",
                             code="INVALID_MMA_OP")
        _C.gemm_scaled(_atom_of(atom), d, a[0], a[1], b[0], b[1], c, *user_line())
        return
    _C.gemm(_atom_of(atom), d, a, b, c, *user_line())


def mma_atom_call(atom, d, a, b, c, *, loc=None, ip=None, **kwargs):
    _C.gemm(_atom_of(atom), d, a, b, c)


def make_tiled_copy_A(copy_atom, tiled_mma, *, loc=None, ip=None):
    """A tiled copy that partitions an (M, K) tile as the TiledMma's A operand."""
    return _C.make_tiled_copy_mma(copy_atom, tiled_mma, "A")


def make_tiled_copy_B(copy_atom, tiled_mma, *, loc=None, ip=None):
    """A tiled copy that partitions an (N, K) tile as the TiledMma's B operand."""
    return _C.make_tiled_copy_mma(copy_atom, tiled_mma, "B")


def make_tiled_copy_C(copy_atom, tiled_mma, *, loc=None, ip=None):
    """A tiled copy that partitions an (M, N) tile as the TiledMma's accumulator."""
    return _C.make_tiled_copy_mma(copy_atom, tiled_mma, "C")


def make_tiled_copy_C_atom(copy_atom, tiled_mma, *, loc=None, ip=None):
    """The smallest tiled copy that retiles the accumulator fragment (sub-tiled epilogues)."""
    return _C.make_tiled_copy_C_atom(copy_atom, tiled_mma)


__all__ = [
    "MmaAtom", "TiledMma", "ThrMma", "make_mma_atom", "make_tiled_mma", "gemm", "mma_atom_call",
    "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C", "make_tiled_copy_C_atom",
]
