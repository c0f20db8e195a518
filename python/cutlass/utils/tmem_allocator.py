"""`cutlass.utils.TmemAllocator`: tensor-memory allocation for a CTA (or a CTA pair), written in the
DSL as NVIDIA's library is. One warp allocates; the others wait at a named barrier and read the
address back from shared memory; the same warp frees the columns at the end (in a CTA pair, after
the peer CTA said it is done with them, through an mbarrier)."""
from ..cute import arch as _arch
from ..cute.nvgpu import tcgen05 as _tcgen05
from .._dsl.numeric import Float32


class TmemAllocator:
    """`alloc_result_dst_smem_ptr`: an Int32 in shared memory that receives the address;
    `barrier_for_retrieve`: a pipeline.NamedBarrier of the threads that read it;
    `allocator_warp_id`: the warp that allocates and frees; `is_two_cta`: cta_group::2 allocation
    (both CTAs of the pair allocate the same columns); `two_cta_tmem_dealloc_mbar_ptr`: an Int64
    mbarrier in shared memory for the pair's handshake before freeing; `arch`: the architecture
    whose tensor memory is allocated (every sm_100-family part has the same 512 columns)."""

    def __init__(self, alloc_result_dst_smem_ptr, barrier_for_retrieve, allocator_warp_id=0, is_two_cta=False,
                 num_allocated_columns=0, two_cta_tmem_dealloc_mbar_ptr=None, arch="sm_100", *, loc=None, ip=None):
        self.arch = arch
        self.alloc_result_dst_smem_ptr = alloc_result_dst_smem_ptr
        self.barrier_for_retrieve = barrier_for_retrieve
        self.allocator_warp_id = allocator_warp_id
        self.is_two_cta = bool(is_two_cta)
        self.num_allocated_columns = num_allocated_columns
        self.two_cta_tmem_dealloc_mbar_ptr = two_cta_tmem_dealloc_mbar_ptr
        if self.is_two_cta and two_cta_tmem_dealloc_mbar_ptr is not None:
            with _arch._if_region(self._is_allocator_warp()):
                with _arch.elect_one():
                    _arch.mbarrier_init(two_cta_tmem_dealloc_mbar_ptr, 1)

    def _is_allocator_warp(self):
        return _arch.make_warp_uniform(_arch.warp_idx()) == self.allocator_warp_id

    def allocate(self, num_columns, *, loc=None, ip=None):
        """The allocator warp allocates `num_columns` columns (a power of two in [32, 512])."""
        self.num_allocated_columns = num_columns
        with _arch._if_region(self._is_allocator_warp()):
            _arch.alloc_tmem(num_columns, self.alloc_result_dst_smem_ptr, is_two_cta=self.is_two_cta)

    def wait_for_alloc(self, *, loc=None, ip=None):
        """The threads of barrier_for_retrieve wait until the address is in shared memory."""
        self.barrier_for_retrieve.arrive_and_wait()

    def retrieve_ptr(self, dtype=Float32, *, loc=None, ip=None):
        """The tensor-memory pointer to `dtype` at the allocated columns."""
        return _arch.retrieve_tmem_ptr(dtype, 16, self.alloc_result_dst_smem_ptr)

    def relinquish_alloc_permit(self, *, loc=None, ip=None):
        with _arch._if_region(self._is_allocator_warp()):
            _arch.relinquish_tmem_alloc_permit(is_two_cta=self.is_two_cta)

    def free(self, tmem_ptr, num_columns=0, *, loc=None, ip=None):
        """The allocator warp frees the columns (`num_columns`, else those allocate() took)."""
        cols = num_columns or self.num_allocated_columns
        with _arch._if_region(self._is_allocator_warp()):
            if self.is_two_cta and self.two_cta_tmem_dealloc_mbar_ptr is not None:
                # Each CTA of the pair tells the other it is done with the columns, then waits for the peer.
                with _arch.elect_one():
                    peer = _arch.block_idx_in_cluster() ^ 1
                    _arch.mbarrier_arrive(self.two_cta_tmem_dealloc_mbar_ptr, peer)
                _arch.mbarrier_wait(self.two_cta_tmem_dealloc_mbar_ptr, 0)
            _arch.dealloc_tmem(tmem_ptr, cols, is_two_cta=self.is_two_cta)


def get_num_tmem_alloc_cols(tmem_tensors, rounding=True, arch="sm_100", *, loc=None, ip=None):
    """The tensor-memory columns that `tmem_tensors` (one tensor or a list) need: the largest
    column any of them reaches, rounded up to a power of two of at least 32 when `rounding`."""
    tensors = tmem_tensors if isinstance(tmem_tensors, (list, tuple)) else [tmem_tensors]
    cols = max(int(_tcgen05.find_tmem_tensor_col_offset(t)) for t in tensors)
    if not rounding:
        return cols
    n = _arch.get_min_tmem_alloc_cols(arch)
    while n < cols:
        n *= 2
    if n > _arch.get_max_tmem_alloc_cols(arch):
        raise ValueError(f"get_num_tmem_alloc_cols: {cols} columns exceed the {_arch.get_max_tmem_alloc_cols(arch)} "
                         "columns of tensor memory")
    return n
