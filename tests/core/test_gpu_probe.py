"""The test session's GPU probe (tests/helpers/gpu_probe.py, used by tests/conftest.py): it says why
it found no GPU, and a machine with CUDA on which OpenCuTe finds none stops the session instead of
skipping every GPU test."""
import os
import subprocess
import sys

import gpu_probe

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _FakeDriver:
    def __init__(self, init_status, devices=0):
        self.init_status, self.devices = init_status, devices

    def cuInit(self, flags):  # noqa: N802 - the driver's spelling
        return self.init_status

    def cuDeviceGetCount(self, count_ref):  # noqa: N802
        count_ref._obj.value = self.devices
        return 0


def _machine(monkeypatch, nodes=(), driver=None):
    monkeypatch.setattr(gpu_probe.glob, "glob", lambda pattern: list(nodes))

    def cdll(name):
        if driver is None:
            raise OSError(f"{name}: cannot open shared object file")
        return driver
    monkeypatch.setattr(gpu_probe.ctypes, "CDLL", cdll)


def test_device_nodes_are_evidence_of_cuda(monkeypatch):
    _machine(monkeypatch, nodes=["/dev/nvidia0", "/dev/nvidia1"])
    assert gpu_probe._machine_evidence() == "device nodes /dev/nvidia0, /dev/nvidia1"


def test_a_driver_that_fails_to_initialise_is_evidence_of_cuda(monkeypatch):
    _machine(monkeypatch, driver=_FakeDriver(init_status=999))
    assert gpu_probe._machine_evidence() == "libcuda.so.1 loads but cuInit(0) returns CUDA error 999"
    _machine(monkeypatch, driver=_FakeDriver(init_status=0, devices=2))
    assert gpu_probe._machine_evidence() == "libcuda.so.1 reports 2 device(s)"


def test_no_driver_no_device_and_the_stub_driver_are_no_gpu(monkeypatch):
    _machine(monkeypatch)
    assert gpu_probe._machine_evidence() == ""
    _machine(monkeypatch, driver=_FakeDriver(init_status=gpu_probe.CUDA_ERROR_NO_DEVICE))
    assert gpu_probe._machine_evidence() == ""
    _machine(monkeypatch, driver=_FakeDriver(init_status=gpu_probe.CUDA_ERROR_STUB_LIBRARY))
    assert gpu_probe._machine_evidence() == ""


def test_the_probe_names_why_it_found_no_gpu(monkeypatch):
    import cutlass
    monkeypatch.setattr(cutlass.cuda, "is_available", lambda: False)
    monkeypatch.setattr(gpu_probe, "_machine_evidence", lambda: "")
    probe = gpu_probe.probe()
    assert not probe.available and probe.broken_cuda == ""
    if not cutlass._core.cuda_available():  # without a driver, its loader's message is the reason
        assert "libcuda.so.1" in probe.why_not and " --> " not in probe.why_not


def test_a_broken_cuda_set_up_stops_the_session(tmp_path):
    # A plugin loaded before tests/conftest.py makes the machine look like one with device nodes
    # on which OpenCuTe finds no GPU.
    (tmp_path / "fake_broken_cuda.py").write_text(
        "import gpu_probe\n"
        "gpu_probe.probe = lambda: gpu_probe.GpuProbe(False, 'cuInit failed (999)', 'device nodes /dev/nvidia0')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.path.join(TESTS, "helpers"),
                                                        os.environ.get("PYTHONPATH", "")]))
    env.pop("OPENCUTE_TESTS_ALLOW_BROKEN_CUDA", None)
    target = "core/test_gpu_probe.py::test_device_nodes_are_evidence_of_cuda"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "fake_broken_cuda", "-p", "no:xdist", "-p", "no:cacheprovider",
           target]
    p = subprocess.run(cmd, cwd=TESTS, env=env, capture_output=True, text=True)
    assert p.returncode == 3, p.stdout + p.stderr
    assert ("CUDA is present (device nodes /dev/nvidia0) but OpenCuTe finds no GPU: cuInit failed (999)"
            in p.stdout + p.stderr)
    # ... and the switch runs the session without the GPU tests.
    env["OPENCUTE_TESTS_ALLOW_BROKEN_CUDA"] = "1"
    p = subprocess.run(cmd, cwd=TESTS, env=env, capture_output=True, text=True)
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout + p.stderr
