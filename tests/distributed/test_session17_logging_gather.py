"""Against PyTorch's gloo on 2 processes: DDP's logging record after every step of a
``no_sync`` / synchronized sequence (keys, and every field but times and the port: the
rebuilt buckets show from the synchronized forward after the no_sync forward that
follows the first synchronized backward, as PyTorch's), and ``all_gather`` /
``all_gather_into_tensor`` with mismatched dtypes and sizes (complex tensors compared as
their real views: error types and messages, and the gathered values where both accept).
"""

import numpy as np
import pytest

from tests.distributed import _session17_workers as workers
from tests.distributed.conftest import needs_mpi, spawn2

pytest.importorskip("torch")

pytestmark = needs_mpi


@pytest.fixture(scope="module")
def logging_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("logging_no_sync")
    return (spawn2(tmp, workers.logging_no_sync, "ember"),
            spawn2(tmp, workers.logging_no_sync, "torch"))


@pytest.mark.parametrize("config", range(len(workers.LOG_CONFIGS)))
@pytest.mark.parametrize("rank", [0, 1])
def test_logging_record_under_no_sync_matches_torch(logging_runs, config, rank):
    ours, theirs = logging_runs[0][rank][config], logging_runs[1][rank][config]
    assert len(ours) == len(theirs) == len(workers.LOG_SEQUENCE) + 1
    for step, (a, b) in enumerate(zip(ours, theirs)):
        where = (workers.LOG_CONFIGS[config], step, (workers.LOG_SEQUENCE + "-")[step])
        assert a["keys"] == b["keys"], where
        assert a["fields"] == b["fields"], where
        assert a["rebuilt"] == b["rebuilt"], where
    # the rebuilt layout is reported (the first synchronized step after the rebuild);
    # find_unused_parameters keeps its first buckets
    rebuilds = "find_unused_parameters" not in workers.LOG_CONFIGS[config]
    assert any("rebuilt_bucket_sizes" in s["fields"] for s in ours) == rebuilds


@pytest.fixture(scope="module")
def gather_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("all_gather_checks")
    return (spawn2(tmp, workers.all_gather_checks, "ember"),
            spawn2(tmp, workers.all_gather_checks, "torch"))


@pytest.mark.parametrize("rank", [0, 1])
def test_all_gather_mismatches_as_torch_gloo(gather_runs, rank):
    ours, theirs = gather_runs[0][rank], gather_runs[1][rank]
    assert ours.keys() == theirs.keys()
    for case, want in theirs.items():
        got = ours[case]
        assert got[0] == want[0], (case, got, want)
        if want[0] != "ok":
            assert got == want, case
            continue
        assert [d for d, _ in got[1]] == [d for d, _ in want[1]], case
        for (_, g), (_, w) in zip(got[1], want[1]):
            np.testing.assert_array_equal(g, w, err_msg=str(case))
    # the complex-into-float cases that torch accepts were reached and gathered data
    assert ours[("c64_into_f32_real_view", False)][0] == "ok"
    assert ours[("c64_into_f32_short", False)][0] == "RuntimeError"
