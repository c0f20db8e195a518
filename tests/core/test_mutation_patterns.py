"""tests/mutation/run_mutations.py stays runnable: every mutation's patch matches the source it
mutates exactly once (the full check, which rebuilds, is run by hand: docs/debugging.md)."""
import os
import shutil

import pytest

import run_mutations


def test_every_mutation_patch_matches_the_source_once():
    statuses = run_mutations.check_patterns()
    assert {name for name, (state, _) in statuses.items() if state == "run"} >= {
        "wgmma_accumulators_reversed", "mma_sync_accumulators_reversed", "wgmma_a_b_descriptors_swapped",
        "wgmma_transpose_swapped", "ldmatrix_destination_pair_swapped", "tma_coordinates_reversed",
        "gmma_descriptor_sbo_shifted",
        "tcgen05_mma_a_b_descriptors_swapped", "tcgen05_instruction_descriptor_m_n_swapped"}
    for name, (state, why) in statuses.items():
        assert state == "run" or why.startswith("not yet: "), (name, why)


def _copy(tmp_path, mutation):
    for p in mutation.patches:
        os.makedirs(tmp_path / os.path.dirname(p.path), exist_ok=True)
        shutil.copy(os.path.join(run_mutations.REPO, p.path), tmp_path / p.path)


def test_a_patch_that_no_longer_matches_stops_the_script(tmp_path):
    mutation = next(m for m in run_mutations.MUTATIONS if m.name == "wgmma_transpose_swapped")
    _copy(tmp_path, mutation)
    path = tmp_path / mutation.patches[0].path
    path.write_text(path.read_text().replace(mutation.patches[0].old, "/* rewritten */"))
    with pytest.raises(run_mutations.ScriptError,
                       match="mutation wgmma_transpose_swapped: its pattern matches cpp/src/target/nvvm/"
                             "lower_sm90_mma.cpp 0 times, not once"):
        run_mutations.check_patterns(str(tmp_path), [mutation])
