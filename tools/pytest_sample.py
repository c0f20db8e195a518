"""pytest plugin (`-p pytest_sample`, tools/ on PYTHONPATH): keeps one collected test in
$OPENCUTE_SAMPLE_EVERY (tools/run_library_suites.py --sample K), chosen by a hash of its
"file.py::name", so the same tests are kept on every machine and run, spread over all parameter
values of a parametrised test rather than a contiguous slice of them."""
import os
import zlib


def is_sampled(test_id, every):
    return zlib.crc32(test_id.encode()) % every == 0


def pytest_collection_modifyitems(config, items):
    every = int(os.environ.get("OPENCUTE_SAMPLE_EVERY", "1"))
    if every <= 1:
        return
    keep, drop = [], []
    for item in items:
        (keep if is_sampled(f"{os.path.basename(str(item.fspath))}::{item.name}", every) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
