"""`cutlass._mlir.dialects.cute_nvgpu`: `TmaDescriptorTiledType`, the pointee type that names a TMA
descriptor slot (a 128-byte tiled tensor map) in a `cute.PtrType` (see dialects.cute)."""


class TmaDescriptorTiledType:
    @staticmethod
    def get(context=None):
        return TmaDescriptorTiledType()

    def __repr__(self):
        return "!cute_nvgpu.tma_descriptor_tiled"
