"""`cute.nvgpu.tcgen05`: Blackwell (sm_100) tensor-core MMAs (tcgen05.mma, D in tensor memory),
tensor-memory loads and stores, and tcgen05.commit; the block-scaled MMAs (MmaMXF8Op, MmaMXF4Op,
MmaMXF4NVF4Op, their factors at Field.SFA / SFB; sm_103's K = 96 SM103MmaMXF4Op /
SM103MmaMXF4NVF4Op over make_umma_smem_desc) and the shared-to-tensor-memory copy of their
factors (Cp4x32x128bOp, make_s2t_copy, get_s2t_smem_desc_tensor). The other tcgen05.cp shapes are
names only for now: they raise a DSL error (NOT_SUPPORTED) when used."""
from . import copy, mma
from .copy import (Cp2x64x128bOp, Cp4x32x128bOp, Cp4x256bOp, Cp128x128bOp, Cp128x256bOp, Ld16x32bx2Op, Ld16x64bOp,
                   Ld16x128bOp, Ld16x256bOp, Ld32x32bOp, Pack, Repetition, St16x32bx2Op, St16x64bOp, St16x128bOp,
                   St16x256bOp, St32x32bOp, Unpack, find_tmem_tensor_col_offset, get_s2t_smem_desc_tensor,
                   get_tmem_copy_properties, is_tmem_load, is_tmem_store, make_s2t_copy, make_tmem_copy)
from .helpers import (commit, fence_after_thread_sync, fence_before_thread_sync, make_smem_layout_atom,
                      tile_to_mma_shape)
from .mma import (CtaGroup, Field, MmaF8F6F4Op, MmaF16BF16Op, MmaFP8Op, MmaI8Op, MmaMXF4NVF4Op, MmaMXF4Op, MmaMXF8Op,
                  MmaOp, MmaTF32Op, OperandMajorMode, OperandSource, SM100MmaPeerBitMask, SM103MmaMXF4NVF4Op,
                  SM103MmaMXF4Op, SmemLayoutAtomKind, make_umma_smem_desc)

