"""cutlass.utils.TensorMapManager / TensorMapUpdateMode: the parts that stand on their own
(argument checks, descriptor-slot pointers). The descriptor copies and updates call the
cute.nvgpu.cpasync descriptor operations of the TMA work and are tested with it."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
from cutlass import Int32


@cute.kernel
def slot_kernel(maps: cute.Tensor, out: cute.Tensor):
    manager = utils.TensorMapManager(utils.TensorMapUpdateMode.GMEM, 128)
    for slot in cutlass.range_constexpr(3):
        ptr = manager.get_tensormap_ptr(maps[(1, slot, None)].iterator)
        view = cute.make_tensor(ptr, cute.make_layout(16))
        view[0] = Int32(slot + 1)  # the slot's first word, through the manager's pointer
        out[slot] = Int32(ptr.toint() - maps.iterator.toint())


@cute.jit
def slot_host(maps: cute.Tensor, out: cute.Tensor):
    slot_kernel(maps, out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_tensormap_pointers_address_each_slot():
    maps = np.zeros((2, 3, 16), np.int64)  # (CTAs, descriptors, 128 bytes as Int64), as grouped_gemm.py sizes it
    out = np.zeros(3, np.int32)
    slot_host(maps, out)
    np.testing.assert_array_equal(out, [(3 + s) * 128 for s in range(3)])  # CTA 1's slots
    np.testing.assert_array_equal(maps[1, :, 0], [1, 2, 3])
    assert not maps[0].any()


def test_tensormap_manager_arguments_are_checked():
    assert {m.name for m in utils.TensorMapUpdateMode} == {"GMEM", "SMEM"}
    with pytest.raises(cutlass.DSLUserCodeError, match="TensorMapUpdateMode"):
        utils.TensorMapManager("SMEM", 128)
    with pytest.raises(cutlass.DSLUserCodeError, match="multiple of 128"):
        utils.TensorMapManager(utils.TensorMapUpdateMode.SMEM, 96)
    manager = utils.TensorMapManager(utils.TensorMapUpdateMode.SMEM, 128)
    assert manager.tensormap_update_mode is utils.TensorMapUpdateMode.SMEM and manager.bytes_per_tensormap == 128
    with pytest.raises(cutlass.DSLUserCodeError, match="gmem or smem"):
        manager.get_tensormap_ptr(None, cute.AddressSpace.rmem)


def test_a_frozen_dataclass_subclass_takes_the_two_fields():
    # quack's TensorMapManagerSm90 is `@dataclass(frozen=True) class ...(TensorMapManager)` with its
    # own jit methods, constructed as TensorMapManagerSm90(mode, bytes_per_tensormap).
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Subclassed(utils.TensorMapManager):
        def slot_offset(self, slot):
            return slot * self.bytes_per_tensormap

    manager = Subclassed(utils.TensorMapUpdateMode.GMEM, 256)
    assert manager.tensormap_update_mode is utils.TensorMapUpdateMode.GMEM and manager.slot_offset(3) == 768
    with pytest.raises(dataclasses.FrozenInstanceError):
        manager.bytes_per_tensormap = 128
    with pytest.raises(cutlass.DSLUserCodeError, match="multiple of 128"):
        Subclassed(utils.TensorMapUpdateMode.GMEM, 100)
