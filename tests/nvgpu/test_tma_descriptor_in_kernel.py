"""make_tiled_tma_atom called in a kernel (NVIDIA's MoE grouped GEMMs build one descriptor per
expert from run-time extents read in the kernel): the kernel encodes the descriptor, writes it to
a 128-byte slot with cpasync.copy_tensormap, and TMA loads name the slot (tma_desc_ptr=). Checked
on the CPU emulator against numpy (the rows past the run-time extent are TMA's zero fill); the
atom's descriptor itself cannot be used by a TMA copy (it exists on the GPU only in the slot);
the PTX (the slot cleared, then tensormap.replace of every field) is linked by nvJitLink."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64
from cutlass._mlir.dialects import cute as cute_ir, cute_nvgpu as cute_nvgpu_ir, llvm
from cutlass.cute.nvgpu import cpasync
import toolchain

TILE = (8, 32)
COLS = 32


def _aligned(values, align=128):
    raw = np.zeros(values.nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    out = raw[start:start + values.nbytes].view(values.dtype).reshape(values.shape)
    out[...] = values
    return out


def _mlir_slot(gslot):
    """The slot as NVIDIA's MoE helpers name it (moe_utils.tensormap_ptr_for_copy): cast to a generic
    pointer, rebuilt with make_ptr, recast to a TMA-descriptor pointer type; prefetched."""
    generic = llvm.addrspacecast(llvm.PointerType.get(cute.AddressSpace.generic), gslot.to_llvm_ptr())
    ptr = cute.make_ptr(Int64, generic, cute.AddressSpace.generic, assumed_align=128)
    cute.arch.nvvm_wrappers.prefetch(ptr.to_llvm_ptr(), tensormap=True)
    desc_type = cute_ir.PtrType.get(cute_nvgpu_ir.TmaDescriptorTiledType.get(), ptr.memspace, 128)
    return cute_ir.recast_iter(desc_type, ptr.value)


def _host(through_slot=True, mlir_slot=False, pitch=COLS, copy=True):
    """Block i loads tile i of rows [offs[0], offs[1]) of `b` (rows `pitch` elements apart) through a
    descriptor the kernel made."""
    tm, tk = TILE
    elems = tm * tk

    @cute.kernel
    def kernel(b: cute.Tensor, offs: cute.Tensor, slots: cute.Tensor, out: cute.Tensor):
        bidx, _, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        smem_layout = cute.make_layout(TILE, stride=(tk, 1))
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, elems, alignment=1024), smem_layout)
        gslot = cute.make_ptr(Int64, slots[(bidx, None)].iterator.toint(), cute.AddressSpace.gmem, assumed_align=128)
        start, count = offs[0], offs[1] - offs[0]
        rows = cute.make_tensor(b.iterator + start * pitch, cute.make_layout((count, COLS), stride=(pitch, 1)))
        atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), rows, smem_layout, TILE)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
            cpasync.copy_tensormap(atom, gslot)
            cpasync.fence_tma_desc_release()
        cute.arch.sync_threads()
        if cutlass.const_expr(not copy):
            return
        if tidx < 32:
            cpasync.fence_tma_desc_acquire(gslot)
            g = cute.local_tile(tma_tensor, TILE, (bidx, 0))
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, elems * 4)
            if cutlass.const_expr(mlir_slot):
                cute.copy(atom, g, s, tma_bar_ptr=bar, tma_desc_ptr=_mlir_slot(gslot))
            elif cutlass.const_expr(through_slot):
                cute.copy(atom, g, s, tma_bar_ptr=bar, tma_desc_ptr=gslot)
            else:
                cute.copy(atom, g, s, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, elems, 64):
            out[bidx * tm + i // tk, i % tk] = s[i // tk, i % tk]

    @cute.jit
    def host(b: cute.Tensor, offs: cute.Tensor, slots: cute.Tensor, out: cute.Tensor):
        kernel(b, offs, slots, out).launch(grid=(cute.size(slots, mode=[0]), 1, 1), block=(64, 1, 1))

    return host


def _inputs(start, stop, tiles, pitch=COLS):
    b = _aligned(np.arange(40 * pitch, dtype=np.float32).reshape(40, pitch) * 2 + 1)
    offs = np.array([start, stop], np.int32)
    slots = _aligned(np.zeros((tiles, 16), np.int64))
    out = np.full((tiles * TILE[0], COLS), -1, np.float32)
    return b, offs, slots, out


@pytest.mark.parametrize("mlir_slot", [False, True], ids=["slot", "slot named through the MLIR surface"])
def test_a_descriptor_encoded_in_the_kernel_loads_the_rows_it_describes(mlir_slot):
    b, offs, slots, out = _inputs(5, 19, 2)  # 14 rows from row 5: tile 1 is 6 rows and 2 of zero fill
    host = _host(mlir_slot=mlir_slot)
    compiled = cute.compile(host, b, offs, slots, out, options="--target cpu --gpu-arch sm_100a")
    compiled(b, offs, slots, out)
    want = np.zeros((16, COLS), np.float32)
    want[:14] = b[5:19]
    np.testing.assert_array_equal(out, want)
    # Other extents at run time: the same compiled kernel encodes them.
    offs[:] = (30, 40)
    compiled(b, offs, slots, out)
    want[:] = 0
    want[:10] = b[30:40]
    np.testing.assert_array_equal(out, want)


def test_the_kernel_made_atom_cannot_copy_without_its_slot():
    b, offs, slots, out = _inputs(0, 16, 2)
    with pytest.raises(cutlass.DSLUserCodeError, match="made in the kernel.*tma_desc_ptr="):
        cute.compile(_host(through_slot=False), b, offs, slots, out, options="--target cpu --gpu-arch sm_100a")


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_ptx_sets_every_field_of_the_slot_with_tensormap_replace(arch, monkeypatch):
    toolchain.require_cubin()
    monkeypatch.setenv("OPENCUTE_EMULATOR_LINK_CUBIN", "1")
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "True")
    # Rows with a gap between them: whole contiguous rows would merge into one dimension (CuTe's
    # coalesce of the box), leaving no global stride to set.
    b, offs, slots, out = _inputs(0, 16, 2, pitch=COLS + 8)
    compiled = cute.compile(_host(pitch=COLS + 8), b, offs, slots, out, options=f"--target cpu --gpu-arch {arch}")
    assert bytes(compiled.__cubin__[:4]) == b"\x7fELF"  # nvJitLink accepted the PTX for the arch
    ptx = compiled.__ptx__
    for field in ("global_address.global.b1024.b64", "rank.global.b1024.b32", "elemtype.global.b1024.b32",
                  "swizzle_mode.global.b1024.b32", "box_dim.global.b1024.b32", "element_stride.global.b1024.b32",
                  "global_dim.global.b1024.b32", "global_stride.global.b1024.b64"):
        assert "tensormap.replace.tile." + field in ptx, field


@pytest.mark.gpu
def test_a_descriptor_encoded_in_the_kernel_loads_on_the_gpu():
    # The lowering sets the fields through tensormap.replace (no PTX instruction encodes a whole
    # tensor map): sm_90a has the same instructions, so an H100 checks it.
    torch = pytest.importorskip("torch")
    cutlass.cuda.initialize_cuda_context()
    b, offs, slots, out = _inputs(5, 19, 2)
    args = [torch.from_numpy(x.copy()).cuda() for x in (b, offs, slots, out)]
    _host()(*args)
    torch.cuda.synchronize()
    want = np.zeros((16, COLS), np.float32)
    want[:14] = b[5:19]
    np.testing.assert_array_equal(args[3].cpu().numpy(), want)


def test_an_empty_range_encodes_and_only_a_copy_through_it_is_refused():
    # An empty expert (NVIDIA's MoE GEMMs encode a descriptor per expert): extent 0, which TMA
    # refuses, is written to the slot like any other; only a copy through it is an error.
    b, offs, slots, out = _inputs(7, 7, 1)
    compiled = cute.compile(_host(copy=False), b, offs, slots, out, options="--target cpu --gpu-arch sm_100a")
    compiled(b, offs, slots, out)
    assert (out == -1).all()
    with pytest.raises(cutlass.DSLRuntimeError, match="encoded from values TMA refuses"):
        cute.compile(_host(), b, offs, slots, out, options="--target cpu --gpu-arch sm_100a")(b, offs, slots, out)
