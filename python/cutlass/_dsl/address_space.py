"""`cutlass.AddressSpace` (also `cute.AddressSpace`): where a pointer points. The values are
the IR's address-space numbers (cpp/src/ir/types.h), which are NVVM's."""
import enum


class AddressSpace(enum.IntEnum):
    generic = 0
    gmem = 1
    smem = 3
    cmem = 4
    rmem = 5
    tmem = 6
    dsmem = 7

    def __str__(self):
        return self.name


# Spaces a pointer argument of a compiled function can have: the IR has no others yet.
ARGUMENT_SPACES = (AddressSpace.generic, AddressSpace.gmem, AddressSpace.smem, AddressSpace.cmem,
                   AddressSpace.rmem)
