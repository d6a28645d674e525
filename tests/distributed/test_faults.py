"""Faults in 2 processes: mismatched collectives raise on every rank, a dead rank makes the
other fail within the group's timeout, and TORCH_DISTRIBUTED_DEBUG=DETAIL logs collectives."""

import pytest

from tests.distributed import _workers
from tests.distributed.conftest import needs_mpi, spawn2

pytestmark = needs_mpi


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    return spawn2(tmp_path_factory.mktemp("faults"), _workers.faults, "ember")


@pytest.mark.parametrize("case,op,want", [
    ("all_reduce_shape", "ALLREDUCE", ("TensorShape=[2]", "TensorShape=[3]")),
    ("broadcast_dtype", "BROADCAST", ("TensorDtypes=Float", "TensorDtypes=Double")),
    ("different_collectives", "ALLREDUCE", ("OpType=ALLREDUCE", "OpType=BROADCAST")),
    ("ddp_different_models", "DDP PARAMETERS", ("TensorShape=[2, 2]", "TensorShape=[3, 2]")),
])
def test_mismatched_collective_raises_on_every_rank(faults, case, op, want):
    for r in faults:
        kind, msg, seconds = r[case]
        # found by comparing the ranks' calls, not by waiting out the group's 60 s timeout
        # (how long the other rank takes to arrive depends on the machine's load)
        assert kind == "RuntimeError" and f"OpType={op}" in msg and seconds < 45
        assert "Rank 0 is running" in msg and "Rank 1 is running" in msg
        assert all(w in msg for w in want)
    assert faults[0][case][1] == faults[1][case][1]


def test_group_still_works_after_mismatch(faults):
    assert [r["after"].tolist() for r in faults] == [[2.0] * 3] * 2


def test_debug_detail_logs_each_collective(faults):
    log = faults[1]["log"]
    assert log[0].startswith("[Rank 1] CollectiveFingerPrint(SequenceNumber=1, "
                             "OpType=ALLREDUCE, TensorShape=[3]")
    assert all("on ranks [0, 1]" in line for line in log)


def test_dead_rank_fails_others_within_timeout(faults):
    kind, msg, seconds = faults[0]["death"]
    assert kind == "DistBackendError" and "timed out after 2.0 s" in msg
    # ended by the subgroup's 2 s timeout, not the default group's 60 s (a loaded machine
    # may take a good while past 2 s to notice)
    assert 1.5 < seconds < 45


def test_monitored_barrier_names_the_missing_rank_as_torch(faults):
    assert faults[0]["monitored_barrier_dead"] == (
        "RuntimeError", "[Rank 0]: Rank 1 failed to pass monitoredBarrier in 500 ms")
