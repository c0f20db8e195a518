"""TMA descriptors in device memory (cute.nvgpu.cpasync.copy_tensormap, update_tma_descriptor,
cp_fence_tma_desc_release, cute.copy(..., tma_desc_ptr=)) and the NVVM-dialect TMA load with a
predicate (cutlass._mlir.dialects.nvvm): a kernel copies the descriptor of an atom made for one
tensor into a 128-byte slot of global or shared memory, re-points it at another tensor of another
shape and loads that tensor's tiles through it. Checked on the CPU emulator against numpy; the PTX
for sm_90a is linked by nvJitLink."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64
from cutlass._mlir.dialects import llvm, nvvm
from cutlass.cute.nvgpu import cpasync
import toolchain

CPU = "--target cpu --gpu-arch sm_90a"
TILE = (8, 32)


def _aligned(values, align=128):
    raw = np.zeros(values.nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    out = raw[start:start + values.nbytes].view(values.dtype).reshape(values.shape)
    out[...] = values
    return out


def _tiles_through_slot(slot_space):
    """Loads every TILE of `b` through a copy of the descriptor made for `a`, re-pointed at `b`
    in a slot in `slot_space` ("gmem": updated there; "smem": updated in shared memory, then
    published to the global slot with cp_fence_tma_desc_release)."""
    tm, tk = TILE
    elems = tm * tk

    @cute.kernel
    def kernel(atom: cute.CopyAtom, b: cute.Tensor, tma_b: cute.Tensor, slots: cute.Tensor, out: cute.Tensor):
        bidx, bidy, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, elems, alignment=1024), cute.make_layout(TILE, stride=(tk, 1)))
        blk = bidx * cute.arch.grid_dim()[1] + bidy
        gslot = cute.make_ptr(Int64, slots[(blk, None)].iterator.toint(), cute.AddressSpace.gmem, assumed_align=128)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if tidx < 32:
            if cutlass.const_expr(slot_space == "smem"):
                sslot = cute.arch.alloc_smem(Int64, 16, alignment=128)
                with cute.arch.elect_one():
                    cpasync.copy_tensormap(atom, sslot)
                cute.arch.sync_warp()
                cpasync.update_tma_descriptor(atom, b, sslot)
                cute.arch.sync_warp()
                cpasync.cp_fence_tma_desc_release(gslot, sslot)
            else:
                with cute.arch.elect_one():
                    cpasync.copy_tensormap(atom, gslot)
                cute.arch.sync_warp()
                cpasync.update_tma_descriptor(atom, b, gslot)
                cute.arch.sync_warp()
                cpasync.fence_tma_desc_release()
            cpasync.fence_tma_desc_acquire(gslot)
            # b's TMA coordinates (in the tensor map's dimension order: the contiguous one first)
            g = cute.local_tile(tma_b, TILE, (bidx, bidy))
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, elems * 4)
            cute.copy(atom, g, s, tma_bar_ptr=bar, tma_desc_ptr=gslot)
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, elems, 64):
            out[bidx * tm + i // tk, bidy * tk + i % tk] = s[i // tk, i % tk]

    @cute.jit
    def host(a: cute.Tensor, b: cute.Tensor, slots: cute.Tensor, out: cute.Tensor):
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, cute.make_layout(TILE, stride=(tk, 1)),
                                              TILE)
        _, tma_b = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), b,
                                               cute.make_layout(TILE, stride=(tk, 1)), TILE)
        kernel(atom, b, tma_b, slots, out).launch(grid=(cute.ceil_div(cute.size(b, mode=[0]), tm),
                                                 cute.ceil_div(cute.size(b, mode=[1]), tk), 1), block=(64, 1, 1))

    return host


def _inputs():
    a = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)  # the atom's tensor: one tile
    b = np.arange(20 * 72, dtype=np.float32).reshape(20, 72) * 3 + 7  # three by three tiles, ragged
    grid = (-(-20 // TILE[0])) * (-(-72 // TILE[1]))
    slots = _aligned(np.zeros((grid, 16), np.int64))
    out = np.full((24, 96), -1, np.float32)
    return a, _aligned(b), slots, out


def _padded(b):
    want = np.zeros((24, 96), np.float32)
    want[:20, :72] = b
    return want


@pytest.mark.parametrize("slot_space", ["gmem", "smem"])
def test_tiles_load_through_a_descriptor_re_pointed_in_device_memory(slot_space):
    a, b, slots, out = _inputs()
    host = _tiles_through_slot(slot_space)
    cute.compile(host, a, b, slots, out, options=CPU)(a, b, slots, out)
    np.testing.assert_array_equal(out, _padded(b))  # b's tiles (zero-filled past its edges), not a's


def test_updating_memory_that_holds_no_tensor_map_is_reported():
    @cute.kernel
    def kernel(atom: cute.CopyAtom, b: cute.Tensor, slots: cute.Tensor):
        gslot = cute.make_ptr(Int64, slots.iterator.toint(), cute.AddressSpace.gmem, assumed_align=128)
        cpasync.update_tma_descriptor(atom, b, gslot)  # no copy_tensormap first

    @cute.jit
    def host(a: cute.Tensor, b: cute.Tensor, slots: cute.Tensor):
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, cute.make_layout(TILE, stride=(32, 1)),
                                              TILE)
        kernel(atom, b, slots).launch(grid=(1, 1, 1), block=(32, 1, 1))

    a, b, slots, _ = _inputs()
    f = cute.compile(host, a, b, slots, options=CPU)
    with pytest.raises(cutlass.DSLRuntimeError, match=r"holds no tensor map.*\(line \d+\)"):
        f(a, b, slots)


def _predicated_kernel(predicate_kind):
    """Tiles of `a` into three shared buffers through the NVVM dialect op, issued by the lanes
    where the predicate holds. "lanes": lane l < 2 loads tile l into buffer l (a lane >= 2 would
    load tile 2 into buffer 2, which must stay zero). "elect_sync": the elected lane issues tiles
    0 and 1 (as grouped_gemm.py does), then one more load of tile 0 on the mbarrier's next phase,
    which completes only if the first phase got exactly two tiles of bytes."""
    tm, tk = TILE
    elems = tm * tk

    @cute.kernel
    def kernel(atom: cute.CopyAtom, slots: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.arch.alloc_smem(Float32, 3 * elems, alignment=1024)
        gslot = cute.make_ptr(Int64, slots.iterator.toint(), cute.AddressSpace.gmem, assumed_align=128)
        for i in cutlass.range(tidx, 3 * elems, 64):
            s[i] = Float32(0)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
            cpasync.copy_tensormap(atom, gslot)
            cute.arch.mbarrier_arrive_and_expect_tx(bar, 2 * elems * 4)
        cute.arch.sync_threads()
        if tidx < 32:
            cpasync.fence_tma_desc_acquire(gslot)
            desc = llvm.addrspacecast(llvm.PointerType.get(cute.AddressSpace.generic), gslot.llvm_ptr)
            zero = Int32(0).ir_value()
            if cutlass.const_expr(predicate_kind == "lanes"):
                t = cutlass.min(tidx, 2)
                nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp((s + t * elems).llvm_ptr, desc,
                                                              [zero, Int32(t * tm).ir_value()], bar.llvm_ptr, [],
                                                              predicate=(tidx < 2).ir_value(), mode=nvvm.TMALoadMode.TILE)
            else:
                for t in cutlass.range_constexpr(2):
                    nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp((s + t * elems).llvm_ptr, desc,
                                                                  [zero, Int32(t * tm).ir_value()], bar.llvm_ptr, [],
                                                                  predicate=nvvm.elect_sync(),
                                                                  loadMode=nvvm.CpAsyncBulkTensorLoadMode.TILE)
        cute.arch.mbarrier_wait(bar, 0)
        if cutlass.const_expr(predicate_kind == "elect_sync"):
            cute.arch.sync_threads()
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, elems * 4)
            if tidx < 32:
                desc = llvm.addrspacecast(llvm.PointerType.get(cute.AddressSpace.generic), gslot.llvm_ptr)
                nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(s.llvm_ptr, desc, [Int32(0).ir_value(), Int32(0).ir_value()],
                                                              bar.llvm_ptr, [], predicate=nvvm.elect_sync())
            cute.arch.mbarrier_wait(bar, 1)
        for i in cutlass.range(tidx, 3 * elems, 64):
            out[i] = s[i]

    @cute.jit
    def host(a: cute.Tensor, slots: cute.Tensor, out: cute.Tensor):
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, cute.make_layout(TILE, stride=(tk, 1)),
                                              TILE)
        kernel(atom, slots, out).launch(grid=(1, 1, 1), block=(64, 1, 1))

    return host


@pytest.mark.parametrize("predicate_kind", ["lanes", "elect_sync"])
def test_nvvm_tma_load_is_issued_by_the_lanes_where_its_predicate_holds(predicate_kind):
    a = _aligned(np.arange(24 * 32, dtype=np.float32).reshape(24, 32) - 100)
    slots = _aligned(np.zeros((1, 16), np.int64))
    out = np.full(3 * 8 * 32, -1, np.float32)
    host = _predicated_kernel(predicate_kind)
    cute.compile(host, a, slots, out, options=CPU)(a, slots, out)
    want = a.reshape(-1).copy()
    want[2 * 8 * 32:] = 0  # tile 2 was never asked for
    np.testing.assert_array_equal(out, want)


def test_ptx_for_sm90a_replaces_and_publishes_tensor_maps_and_predicates_the_nvvm_load():
    a, b, slots, out = _inputs()
    smem = cute.compile(_tiles_through_slot("smem"), a, b, slots, out, options="--gpu-arch sm_90a")
    gmem = cute.compile(_tiles_through_slot("gmem"), a, b, slots, out, options="--gpu-arch sm_90a")
    a2 = _aligned(np.zeros((24, 32), np.float32))
    pred = cute.compile(_predicated_kernel("lanes"), a2, slots, np.zeros(768, np.float32), options="--gpu-arch sm_90a")
    toolchain.ptx_of(smem)
    for f in (smem, gmem, pred):
        assert f.__cubin__  # nvJitLink linked the PTX for sm_90a
    g, s, p = gmem.__ptx__, smem.__ptx__, pred.__ptx__
    # (M, K) tensors: dimension 0 is K (contiguous), dimension 1 is M with its byte stride.
    for field in ("global_address.global.b1024.b64 [", "global_dim.global.b1024.b32 [", "global_stride.global.b1024.b64 ["):
        assert "tensormap.replace.tile." + field in g
        assert "tensormap.replace.tile." + field.replace(".global.", ".shared::cta.") in s
    assert "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned" in s
    assert "fence.proxy.tensormap::generic.release.gpu;" in g
    assert "ld.v2.b64" in g and "st.v2.b64" in g  # the descriptor's 128 bytes, copied
    # The predicated load: no election of its own, the predicate guards the instruction.
    load = [ln for ln in p.splitlines() if "cp.async.bulk.tensor.2d" in ln]
    assert load and all(ln.strip().startswith("@") for ln in load)


def test_a_new_tensor_whose_innermost_mode_is_not_contiguous_is_refused():
    @cute.kernel
    def kernel(atom: cute.CopyAtom, b: cute.Tensor, slots: cute.Tensor):
        gslot = cute.make_ptr(Int64, slots.iterator.toint(), cute.AddressSpace.gmem, assumed_align=128)
        bt = cute.make_tensor(b.iterator, cute.make_layout((20, 72), stride=(1, 20)))  # M contiguous, not K
        cpasync.update_tma_descriptor(atom, bt, gslot)

    @cute.jit
    def host(a: cute.Tensor, b: cute.Tensor, slots: cute.Tensor):
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, cute.make_layout(TILE, stride=(32, 1)),
                                              TILE)
        kernel(atom, b, slots).launch(grid=(1, 1, 1), block=(32, 1, 1))

    a, b, slots, _ = _inputs()
    with pytest.raises(cutlass.DSLUserCodeError, match="innermost box dimension needs it contiguous"):
        cute.compile(host, a, b, slots, options=CPU)


@pytest.mark.parametrize("bad", ["predicate", "mode", "im2col"])
def test_nvvm_tma_load_misuse_is_refused(bad):
    @cute.kernel
    def kernel(slots: cute.Tensor):
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.arch.alloc_smem(Float32, 256, alignment=1024)
        gslot = cute.make_ptr(Int64, slots.iterator.toint(), cute.AddressSpace.gmem, assumed_align=128)
        z = Int32(0).ir_value()
        kw = {"predicate": nvvm.elect_sync()}
        if cutlass.const_expr(bad == "predicate"):
            kw = {"predicate": Int32(1).ir_value()}
        if cutlass.const_expr(bad == "mode"):
            kw["mode"] = nvvm.TMALoadMode.IM2COL
        nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(s.llvm_ptr, gslot.llvm_ptr, [z, z], bar.llvm_ptr,
                                                      [z] if cutlass.const_expr(bad == "im2col") else [], **kw)

    @cute.jit
    def host(slots: cute.Tensor):
        kernel(slots).launch(grid=(1, 1, 1), block=(32, 1, 1))

    slots = _aligned(np.zeros((1, 16), np.int64))
    with pytest.raises(cutlass.DSLUserCodeError, match={"predicate": "predicate must be a Boolean", "mode": "IM2COL",
                                                        "im2col": "im2colOffsets"}[bad]):
        cute.compile(host, slots, options=CPU)


def test_a_kernel_reaching_buffers_through_addresses_it_read_runs_on_the_emulator():
    # grouped GEMM's pattern: the addresses of each group's tensors arrive in an Int64 tensor.
    @cute.kernel
    def kernel(addresses: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        dst = cute.make_tensor(cute.make_ptr(Float32, addresses[0], cute.AddressSpace.gmem, assumed_align=4),
                               cute.make_layout(32))
        dst[tidx] = Float32(tidx) * 2

    @cute.jit
    def host(addresses: cute.Tensor):
        kernel(addresses).launch(grid=(1, 1, 1), block=(32, 1, 1))

    target = np.zeros(32, np.float32)
    addresses = np.array([target.ctypes.data], np.int64)
    cute.compile(host, addresses, options=CPU)(addresses)
    np.testing.assert_array_equal(target, np.arange(32, dtype=np.float32) * 2)


def test_make_warp_uniform_keeps_a_shared_address_whole():
    # grouped_gemm.py re-makes shared pointers from make_warp_uniform(ptr.toint()): on the emulator
    # the address is a 64-bit host address, which an Int32 would cut.
    @cute.kernel
    def kernel(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        buf = cute.arch.alloc_smem(Float32, 32, alignment=16)
        p = cute.make_ptr(Float32, cute.arch.make_warp_uniform(buf.toint()), cute.AddressSpace.smem, assumed_align=16)
        p[tidx] = Float32(tidx) + 1
        cute.arch.sync_warp()
        out[tidx] = buf[31 - tidx]

    @cute.jit
    def host(out: cute.Tensor):
        kernel(out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    out = np.zeros(32, np.float32)
    cute.compile(host, out, options=CPU)(out)
    np.testing.assert_array_equal(out, 32 - np.arange(32, dtype=np.float32))


class _KernelNamingItsOwnClass:
    """grouped_gemm.py's kernel class reads its own class attributes by the class's name inside
    its @cute.jit methods (`HopperGroupedGemmPersistentKernel.bytes_per_tensormap`)."""
    scale = 3

    @cute.jit
    def __call__(self, out: cute.Tensor):
        for i in cutlass.range(4):
            out[i] = Int32(i) * _KernelNamingItsOwnClass.scale


def test_a_jit_method_may_name_its_own_class():
    out = np.zeros(4, np.int32)
    cute.compile(_KernelNamingItsOwnClass(), out, options=CPU)(out)
    np.testing.assert_array_equal(out, np.arange(4) * 3)


def _manager_host(mode):
    """cutlass.utils.TensorMapManager as NVIDIA's grouped GEMMs drive it: GMEM mode initialises and
    updates the global slot; SMEM mode initialises a shared copy, updates it and publishes it."""
    from cutlass.utils import TensorMapManager, TensorMapUpdateMode
    update_mode = getattr(TensorMapUpdateMode, mode)
    tm, tk = TILE
    elems = tm * tk

    @cute.kernel
    def kernel(atom: cute.CopyAtom, b: cute.Tensor, tma_b: cute.Tensor, slots: cute.Tensor, out: cute.Tensor):
        bidx, bidy, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, elems, alignment=1024), cute.make_layout(TILE, stride=(tk, 1)))
        sslot = cute.arch.alloc_smem(Int64, 16, alignment=128)
        manager = TensorMapManager(update_mode, 128)
        gslot = manager.get_tensormap_ptr(slots[(bidx * cute.arch.grid_dim()[1] + bidy, None)].iterator)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if tidx < 32:
            if cutlass.const_expr(mode == "SMEM"):
                manager.init_tensormap_from_atom(atom, sslot, 0)
            else:
                manager.init_tensormap_from_atom(atom, gslot, 0)
            manager.fence_tensormap_initialization()
            manager.update_tensormap((b,), (atom,), (gslot,), 0, (sslot,))
            manager.fence_tensormap_update(gslot)
            # b's TMA coordinates (in the tensor map's dimension order: the contiguous one first)
            g = cute.local_tile(tma_b, TILE, (bidx, bidy))
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, elems * 4)
            cute.copy(atom, g, s, tma_bar_ptr=bar,
                      tma_desc_ptr=manager.get_tensormap_ptr(gslot, cute.AddressSpace.generic))
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, elems, 64):
            out[bidx * tm + i // tk, bidy * tk + i % tk] = s[i // tk, i % tk]

    @cute.jit
    def host(a: cute.Tensor, b: cute.Tensor, slots: cute.Tensor, out: cute.Tensor):
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, cute.make_layout(TILE, stride=(tk, 1)),
                                              TILE)
        _, tma_b = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), b,
                                               cute.make_layout(TILE, stride=(tk, 1)), TILE)
        kernel(atom, b, tma_b, slots, out).launch(grid=(cute.ceil_div(cute.size(b, mode=[0]), tm),
                                                 cute.ceil_div(cute.size(b, mode=[1]), tk), 1), block=(64, 1, 1))

    return host


@pytest.mark.parametrize("mode", ["GMEM", "SMEM"])
def test_tensormap_manager_re_points_a_descriptor(mode):
    a, b, slots, out = _inputs()
    cute.compile(_manager_host(mode), a, b, slots, out, options=CPU)(a, b, slots, out)
    np.testing.assert_array_equal(out, _padded(b))


def _static(x):
    from cutlass.cute.runtime import from_dlpack
    return from_dlpack(x, assumed_align=16)


@pytest.mark.parametrize("target", ["cpu", "ptx"])
def test_an_atom_folded_from_a_static_tensor_re_points_at_a_tensor_that_folds_the_same_way(target):
    # a's (8, 32):(32, 1) tile is the whole tensor, so the atom reads it as one 256-element
    # dimension; c (24, 32):(32, 1) is contiguous the same way: one dimension of 768.
    a, _, slots, out = _inputs()
    c = _aligned(np.arange(24 * 32, dtype=np.float32).reshape(24, 32) * 5 - 3)
    out = np.full((24, 32), -1, np.float32)
    args = (_static(a), _static(c), slots, out)
    cute.compile(_manager_host("GMEM"), *args, options=f"--target {target} --gpu-arch sm_90a")(*args)
    np.testing.assert_array_equal(out, c)


def test_re_pointing_a_folded_atom_at_a_tensor_that_does_not_fold_the_same_way_is_refused():
    # Folded from a's (8, 32):(32, 1), the tensor map has no second stride to re-point: b's rows
    # of 72 would be read 32 apart.
    a, b, slots, out = _inputs()
    with pytest.raises(cutlass.DSLRuntimeError, match="reads leaves 1 and 0 as one dimension") as e:
        cute.compile(_manager_host("GMEM"), _static(a), _static(b), slots, out, options=CPU)
    assert "test_tma_descriptor_update.py" in str(e.value) and "mark_layout_dynamic" in str(e.value)


def test_a_pointer_rebuilt_from_an_argument_s_address_is_still_bounds_checked():
    @cute.kernel
    def kernel(x: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        p = cute.make_ptr(Float32, x.iterator.toint(), cute.AddressSpace.gmem, assumed_align=4)
        cute.make_tensor(p, cute.make_layout(64))[tidx + 32] = Float32(1)  # 32 past x's end

    @cute.jit
    def host(x: cute.Tensor):
        kernel(x).launch(grid=(1, 1, 1), block=(32, 1, 1))

    x = np.zeros(32, np.float32)
    with pytest.raises(cutlass.DSLRuntimeError, match="out-of-bounds store"):
        cute.compile(host, x, options=CPU)(x)


# ---- the same kernels on an sm_90 GPU (skipped without one) -------------------------------------

@pytest.fixture(scope="module")
def torch():
    t = pytest.importorskip("torch")
    if not t.cuda.is_available() or t.cuda.get_device_capability()[0] < 9:
        pytest.skip("needs an sm_90 GPU")
    return t


def _gpu(torch, x):
    """x on the GPU, with a dynamic layout as numpy arrays get on the CPU (an atom made from a
    static contiguous tensor folds its modes into one dimension: see the folded-atom tests)."""
    from cutlass.cute.runtime import from_dlpack
    d = torch.from_numpy(np.ascontiguousarray(x)).cuda()
    return d, from_dlpack(d, assumed_align=16).mark_layout_dynamic()


@pytest.mark.gpu
@pytest.mark.parametrize("slot_space", ["gmem", "smem"])
def test_tiles_load_through_a_re_pointed_descriptor_on_the_gpu(torch, slot_space):
    a, b, slots, out = _inputs()
    (_, ta), (_, tb), (_, ts), (dout, tout) = (_gpu(torch, x) for x in (a, b, slots, out))
    cute.compile(_tiles_through_slot(slot_space), ta, tb, ts, tout)(ta, tb, ts, tout)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(dout.cpu().numpy(), _padded(b))


@pytest.mark.gpu
@pytest.mark.parametrize("predicate_kind", ["lanes", "elect_sync"])
def test_nvvm_tma_load_with_a_predicate_on_the_gpu(torch, predicate_kind):
    a = np.arange(24 * 32, dtype=np.float32).reshape(24, 32) - 100
    (_, ta), (_, ts), (dout, tout) = (_gpu(torch, x) for x in (a, np.zeros((1, 16), np.int64),
                                                                 np.full(3 * 8 * 32, -1, np.float32)))
    cute.compile(_predicated_kernel(predicate_kind), ta, ts, tout)(ta, ts, tout)
    torch.cuda.synchronize()
    want = a.reshape(-1).copy()
    want[2 * 8 * 32:] = 0
    np.testing.assert_array_equal(dout.cpu().numpy(), want)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["GMEM", "SMEM"])
def test_tensormap_manager_on_the_gpu(torch, mode):
    a, b, slots, out = _inputs()
    (_, ta), (_, tb), (_, ts), (dout, tout) = (_gpu(torch, x) for x in (a, b, slots, out))
    cute.compile(_manager_host(mode), ta, tb, ts, tout)(ta, tb, ts, tout)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(dout.cpu().numpy(), _padded(b))
