"""cutlass.utils.HardwareInfo on the emulator for the Blackwell architectures: with CUTE_DSL_TARGET=cpu
and CUTE_DSL_ARCH=sm_100a / sm_100f it answers for a B200 (148 SMs, one CTA per SM when a CTA fills
its 227 KiB of shared memory), sm_103a for a B300, sm_120a for a GeForce RTX 5090, and a cooperative
grid must fit that part; other architectures, and the GPU target, keep asking the device.
Shared-memory capacity per block agrees with the same C++ table."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
from cutlass.cutlass_dsl import DSLCudaRuntimeError
from cutlass.utils.hardware_info import emulated_part


@pytest.fixture
def emulated(monkeypatch):
    def use(arch):
        monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")
        monkeypatch.setenv("CUTE_DSL_ARCH", arch)
    return use


@pytest.mark.parametrize("arch", ["sm_100a", "sm_100f"])
def test_b200_figures(emulated, arch):
    emulated(arch)
    info = utils.HardwareInfo()
    assert info.get_device_multiprocessor_count() == 148
    assert info.get_l2_cache_size_in_bytes() == 126 * 2**20
    assert [info.get_max_active_clusters(n) for n in (1, 2, 4, 8, 16)] == [148, 74, 37, 18, 9]
    part = emulated_part()
    assert part["name"] == "B200"
    assert part["smem_per_sm_bytes"] == 228 * 1024 and part["smem_per_block_bytes"] == 227 * 1024
    assert (part["max_cluster_size_portable"], part["max_cluster_size_non_portable"]) == (8, 16)
    assert utils.get_smem_capacity_in_bytes(arch) == part["smem_per_block_bytes"]
    with pytest.raises(cutlass.DSLRuntimeError, match="cluster_size"):
        info.get_max_active_clusters(17)


def test_b300_for_sm_103a(emulated):
    emulated("sm_103a")
    assert emulated_part()["name"] == "B300"
    assert utils.HardwareInfo().get_device_multiprocessor_count() == 148


@pytest.mark.parametrize("arch", ["sm_120a", "sm_120f"])
def test_geforce_blackwell_stands_for_an_rtx_5090(emulated, arch):
    # NVIDIA's GeForce examples size persistent grids with HardwareInfo: 170 SMs, 99 KiB per block.
    emulated(arch)
    info = utils.HardwareInfo()
    assert info.get_device_multiprocessor_count() == 170
    assert info.get_l2_cache_size_in_bytes() == 96 * 2**20
    assert [info.get_max_active_clusters(n) for n in (1, 2, 4)] == [170, 85, 42]
    assert emulated_part()["name"] == "RTX 5090"
    assert utils.get_smem_capacity_in_bytes(arch) == emulated_part()["smem_per_block_bytes"] == 99 * 1024


def test_smem_capacity_by_name():
    for arch in ("sm_100", "sm_100a", "sm_100f", "sm_103a"):
        assert utils.get_smem_capacity_in_bytes(arch) == 227 * 1024


def test_other_architectures_and_the_gpu_target_ask_the_device(emulated, monkeypatch):
    emulated("sm_90a")
    assert emulated_part() is None
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    monkeypatch.setenv("CUTE_DSL_TARGET", "gpu")
    assert emulated_part() is None
    if not cutlass._core.cuda_available():
        with pytest.raises(cutlass.DSLRuntimeError, match="needs a CUDA device"):
            utils.HardwareInfo().get_device_multiprocessor_count()


def test_automatic_target_without_a_device_is_the_emulator(monkeypatch):
    if cutlass._core.cuda_available():
        pytest.skip("a CUDA device is present: the automatic target is the GPU")
    monkeypatch.delenv("CUTE_DSL_TARGET", raising=False)
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    assert utils.HardwareInfo().get_device_multiprocessor_count() == 148


@cute.kernel
def _coop_kernel(out: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    b, _, _ = cute.arch.block_idx()
    if t == 0:
        out[b] = b


@cute.jit
def _coop_host(out: cute.Tensor, blocks: cutlass.Constexpr):
    _coop_kernel(out).launch(grid=(blocks, 1, 1), block=(1024, 1, 1), cooperative=True)


def test_cooperative_grids_fit_the_emulated_part():
    # 1024-thread blocks, two per SM: 296 co-resident on the emulated B200's 148 SMs, 264 on the
    # H100 the emulator models for sm_90a.
    out = np.zeros(296, np.int32)
    cute.compile(_coop_host, out, 296, options="--target cpu --gpu-arch sm_100a")(out)
    np.testing.assert_array_equal(out, np.arange(296))
    with pytest.raises(DSLCudaRuntimeError, match="264") as info:
        cute.compile(_coop_host, out, 296, options="--target cpu --gpu-arch sm_90a")(out)
    assert int(info.value.error_code) == 720  # cudaErrorCooperativeLaunchTooLarge
