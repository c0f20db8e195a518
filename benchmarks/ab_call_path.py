"""One side of an A/B of the call path: the paired distance from the in-process floor and the host
path, both ABIs, 3 and 19 tensors, for whichever OpenCuTe is importable; prints one JSON line.
Install the two versions side by side (`pip install --no-deps --target /tmp/old <old tree>`, the
same for /tmp/new) and alternate `PYTHONPATH=/tmp/old ...` and `PYTHONPATH=/tmp/new ...` runs.

    python3 benchmarks/ab_call_path.py
"""
import os, sys, json, statistics, importlib.util, tempfile, textwrap, time
import torch
import cutlass, cutlass.cute as cute
from cutlass import _core
out = {}
def kernel(n):
    params = ", ".join(f"t{i}: cute.Tensor" for i in range(n)); args = ", ".join(f"t{i}" for i in range(n))
    path = os.path.join(tempfile.mkdtemp(), f"k{n}.py")
    open(path, "w").write(textwrap.dedent(f"""
    import cutlass
    import cutlass.cute as cute
    @cute.kernel
    def empty_kernel({params}):
        pass
    @cute.jit
    def launch_empty({params}):
        empty_kernel({args}).launch(grid=(1, 1, 1), block=(128, 1, 1))
    """))
    spec = importlib.util.spec_from_file_location(f"k{n}", path); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    return m.launch_empty
def batch(fn, iters=400):
    t0 = time.perf_counter()
    for _ in range(iters): fn()
    t1 = time.perf_counter(); torch.cuda.synchronize(); return (t1 - t0) / iters * 1e6
for n in (3, 19):
    f = kernel(n); ts = [torch.randn(1024, device="cuda") for _ in range(n)]
    fl = _core._LaunchFloor(n)
    for abi, opts in (("def", ""), ("ffi", "--enable-tvm-ffi")):
        c = cute.compile(f, *ts, options=opts); h = cute.compile(f, *ts, options=opts + " --target gpu")
        if abi == "ffi": h._compiled._discard_launches = True
        else: h._discard_launches = True
        call = lambda: c(*ts); host = lambda: h(*ts)
        for _ in range(3): batch(call); fl.batch_us(400); batch(host)
        above, hosts = [], []
        for r in range(61):
            if r % 2: fb = fl.batch_us(400); o = batch(call)
            else: o = batch(call); fb = fl.batch_us(400)
            above.append(o - fb); hosts.append(batch(host))
        out[f"{abi}{n}_above"] = statistics.median(above); out[f"{abi}{n}_host"] = statistics.median(hosts)
print("AB " + json.dumps(out))
