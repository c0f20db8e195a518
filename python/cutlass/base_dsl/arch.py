"""`cutlass.base_dsl.arch.Arch`: GPU architectures as an ordered enum, as NVIDIA's examples compare
them (`Arch.sm_100 <= arch <= Arch.sm_100f` for "the sm_100 family"). Members order by number, and
within one number the plain set before its arch-specific ('a') and family ('f') sets; `major` and
`minor` are the compute capability. Names are read by the C++ core (support::parse_arch)."""
import enum
import functools

from .. import _core
from .._dsl.errors import DSLUserCodeError

_NUMBERS = (80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121)
_SUFFIXES = ("", "a", "f")


@functools.total_ordering
class _ArchEnum(enum.Enum):
    """An architecture; its value is (number, rank of its suffix in '', 'a', 'f')."""

    @property
    def major(self):
        return self.value[0] // 10

    @property
    def minor(self):
        return self.value[0] % 10

    @property
    def suffix(self):
        """'' , 'a' (arch-specific features) or 'f' (family features)."""
        return _SUFFIXES[self.value[1]]

    def __lt__(self, other):
        if not isinstance(other, _ArchEnum):
            return NotImplemented
        return self.value < other.value

    def __hash__(self):
        return hash(self.value)

    def __str__(self):
        return self.name

    @classmethod
    def from_name(cls, name):
        """The member for an architecture name ("sm_100a", "compute_90a", "100a")."""
        parsed = _core.parse_arch(str(name))
        member = cls.__members__.get(f"sm_{parsed[0]}{parsed[1]}") if parsed is not None else None
        if member is None:
            raise DSLUserCodeError(f"unknown GPU architecture {name!r}; known: " + ", ".join(cls.__members__),
                                   code="CONFIG_MALFORMED_COMPILE_OPTIONS")
        return member


# sm_90 has no family set and the parts before it neither an arch-specific nor a family one.
Arch = _ArchEnum("Arch", [(f"sm_{n}{s}", (n, r)) for n in _NUMBERS for r, s in enumerate(_SUFFIXES)
                          if n >= 100 or (n == 90 and s != "f") or not s], module=__name__)
