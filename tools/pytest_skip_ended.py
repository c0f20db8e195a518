"""pytest plugin (`-p pytest_skip_ended`, tools/ on PYTHONPATH): deselects the collected tests whose
"file.py::name" is a line of the file $OPENCUTE_ENDED_TESTS, the tests that ended in an earlier part
of a suite run (tools/run_library_suites.py --resume)."""
import os


def pytest_collection_modifyitems(config, items):
    path = os.environ.get("OPENCUTE_ENDED_TESTS")
    if not path:
        return
    with open(path) as f:
        ended = set(f.read().split("\n"))
    keep, drop = [], []
    for item in items:
        (drop if f"{os.path.basename(str(item.fspath))}::{item.name}" in ended else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
