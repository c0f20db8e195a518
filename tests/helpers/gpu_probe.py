"""Whether the GPU tests can run here, and why not. OpenCuTe's answer (`cutlass.cuda.is_available()`)
is compared with what the machine shows on its own: NVIDIA device nodes, or a CUDA driver whose
cuInit succeeds or fails for a reason other than "no device" / "stub library". When the machine
has CUDA but OpenCuTe cannot use it, the GPU tests would all skip; `broken_cuda` names that case
so that the test session stops instead (tests/conftest.py)."""
import ctypes
import glob

# cuInit's answers that mean "this machine has no usable GPU", not "CUDA is broken".
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_STUB_LIBRARY = 34


class GpuProbe:
    def __init__(self, available, why_not, broken_cuda):
        self.available = available
        self.why_not = why_not  # why OpenCuTe found no GPU ("" when it found one)
        self.broken_cuda = broken_cuda  # what shows CUDA is here although OpenCuTe found no GPU ("" if nothing)


def _machine_evidence():
    """What on this machine, independently of OpenCuTe, says a CUDA GPU is present ("" if nothing)."""
    nodes = sorted(glob.glob("/dev/nvidia[0-9]*"))
    if nodes:
        return "device nodes " + ", ".join(nodes)
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return ""
    status = driver.cuInit(0)
    if status in (CUDA_ERROR_NO_DEVICE, CUDA_ERROR_STUB_LIBRARY):
        return ""
    if status != 0:
        return f"libcuda.so.1 loads but cuInit(0) returns CUDA error {status}"
    count = ctypes.c_int(0)
    if driver.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0:
        return f"libcuda.so.1 reports {count.value} device(s)"
    return ""


def probe():
    import cutlass
    from cutlass import _core

    if cutlass.cuda.is_available():
        return GpuProbe(True, "", "")
    try:
        _core.device_arch(0)
        why = "the CUDA driver loads but reports no device"
    except Exception as e:  # noqa: BLE001 - the driver's own message is the reason to report
        # The driver's message, without the Python location the DSL's errors append (" --> file:line").
        text = str(e).split(" --> ")[0].split("\n-->")[0]
        why = " ".join(line.strip() for line in text.splitlines() if line.strip()) or type(e).__name__
    return GpuProbe(False, why, _machine_evidence())
