"""cute.struct members of packed sub-byte elements (Int4, two to a byte): MemRange[Int4, n] takes
ceil(n / 2) bytes, byte-aligned, and get_tensor views it with Int4 layouts of up to n elements (as
NVIDIA's mixed-input GEMMs keep their Int4 A stages). Hand-computed offsets and sizes."""
import pytest

import cutlass
import cutlass.cute as cute


@cute.struct
class Packed:
    flag: cutlass.Int8                                        # 0
    nibbles: cute.struct.MemRange[cutlass.Int4, 7]           # 1..5 (7 elements: 4 bytes)
    tile: cute.struct.Align[cute.struct.MemRange[cutlass.Int4, 256], 128]  # 128..256
    after: cutlass.Int16                                      # 256


def test_int4_mem_ranges_take_half_a_byte_per_element():
    assert Packed.offset_of("nibbles") == 1
    assert Packed.offset_of("tile") == 128
    assert Packed.offset_of("after") == 256
    assert Packed.size_in_bytes() == 384  # 258 rounded up to the 128-byte alignment


def test_get_tensor_checks_the_int4_range():
    seen = []

    @cute.kernel
    def kernel():
        smem = cutlass.utils.SmemAllocator()
        storage = smem.allocate(Packed)
        seen.append(cute.size(storage.tile.get_tensor(cute.make_layout((16, 16)))))
        with pytest.raises(cutlass.DSLUserCodeError, match="spans 257 elements of Int4"):
            storage.tile.get_tensor(cute.make_layout(257))

    @cute.jit
    def run():
        kernel().launch(grid=(1, 1, 1), block=(32, 1, 1))

    cute.compile(run, options="--target cpu")
    assert seen == [256]
