"""pytest plugin (`-p pytest_spread_gpus`, tools/ on PYTHONPATH): on a machine with several GPUs,
gives each pytest-xdist worker one of the first $OPENCUTE_TEST_GPUS cards (worker gwN gets card
N mod that count) through CUDA_VISIBLE_DEVICES, so a suite's workers share the cards evenly
instead of all landing on card 0 (tools/run_library_suites.py --gpus G). It must run before the
process first touches CUDA, which pytest_configure does: xdist names the worker before pytest
starts in it, and torch and OpenCuTe read the variable when they initialise CUDA, not on import."""
import os


def card_for(worker, gpus):
    """The card of xdist worker `worker` ("gw3") among `gpus` cards."""
    return int(worker.removeprefix("gw")) % gpus


def pytest_configure(config):
    gpus = int(os.environ.get("OPENCUTE_TEST_GPUS", "1"))
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if gpus > 1 and worker:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(card_for(worker, gpus))
