"""DDP's bucket all-reduces advance while backward runs (NOTE [ MPI progress thread ]).

A profile of a DDP backward pass on 2 processes shows the first bucket's ``gloo:all_reduce``
on its own row (thread 2, as PyTorch's gloo thread), ending while a later backward op (the
middle layer's ``AddmmBackward0``, two long matrix products) still runs. Without the
progress thread nothing calls MPI during that op, so the all-reduce cannot be seen to end
before it does: the control run checks the test can fail.
"""

import pickle

import numpy as np
import pytest

import ember.multiprocessing as mp
from tests.distributed import _overlap_workers
from tests.distributed.conftest import free_port, needs_mpi, spawn2

pytestmark = needs_mpi


def _overlapped(span):
    return span["comm_end"] < span["mid_end"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Both ranks' results with the progress thread, then without it."""
    return tuple(spawn2(tmp_path_factory.mktemp(f"ddp_overlap_{thread}"),
                        _overlap_workers.profile_overlap, "ember", thread)
                 for thread in (True, False))


def test_first_bucket_all_reduce_ends_during_later_backward_op(runs):
    on, _ = runs
    for rank in on:
        spans = rank["spans"]
        assert all(s["n_comm"] >= 2 and s["comm_thread"] == 2 for s in spans)
        # under heavy load a peer can fall a whole GEMM behind: one of three iterations
        # must show the overlap
        assert any(_overlapped(s) for s in spans), spans


def test_trace_puts_the_all_reduces_on_their_own_row(runs):
    import json

    on, _ = runs
    with open(on[0]["trace"]) as f:
        events = json.load(f)["traceEvents"]
    comm = [e for e in events if e.get("ph") == "X" and e["name"] == "gloo:all_reduce"]
    ops = [e for e in events if e.get("ph") == "X" and e["name"] == "AddmmBackward0"]
    assert comm and ops
    assert all(e["cat"] == "user_annotation" for e in comm)
    assert {e["tid"] for e in comm}.isdisjoint({e["tid"] for e in ops})
    named = {e["tid"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert {e["tid"] for e in comm} <= named


def test_without_the_thread_no_all_reduce_ends_inside_a_backward_op(runs):
    _, off = runs
    for rank in off:
        assert not any(_overlapped(s) for s in rank["spans"]), rank["spans"]


def test_overlapped_gradients_are_the_full_batch_average(runs):
    import ember

    for results in runs:
        r0, r1 = results
        sizes = [p.shape for p in r0["params"]]
        layers = []
        for w in sizes[0::2]:
            layers += [ember.nn.Linear(w[1], w[0]), ember.nn.ReLU()]
        net = ember.nn.Sequential(*layers[:-1])
        with ember.no_grad():
            for p, v in zip(net.parameters(), r0["params"]):
                p.copy_(ember.from_numpy(v))
        x = ember.from_numpy(np.concatenate([r0["x"], r1["x"]]))
        (net(x).sum() / 2).backward()
        for r in (r0, r1):
            for got, p in zip(r["grads"], net.parameters()):
                np.testing.assert_allclose(got, p.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_torch_trace_shows_the_same_overlap(tmp_path):
    # PyTorch's gloo DDP is the reference the ember test above follows, not code under
    # test: on a loaded machine its all-reduce can end after the middle op in all three
    # iterations (seen once with the machine's load at 10), which says nothing of ember,
    # so that run is reported as a skip rather than a failure
    pytest.importorskip("torch")
    spans = spawn2(tmp_path, _overlap_workers.profile_overlap, "torch", True)
    for rank in spans:
        assert all(s["n_comm"] >= 1 for s in rank["spans"]), rank["spans"]
        if not any(_overlapped(s) for s in rank["spans"]):
            pytest.skip(f"PyTorch's all-reduce did not overlap on this run: {rank['spans']}")



def _spawn(fn, out, nprocs=2):
    """Run ``fn`` in ``nprocs`` processes; rank 0's results."""
    out.mkdir(exist_ok=True)
    mp.spawn(fn, args=("ember", f"tcp://127.0.0.1:{free_port()}", str(out)), nprocs=nprocs)
    with open(out / "rank0.pkl", "rb") as f:
        return pickle.load(f)


def test_a_dead_peer_fails_backward_within_the_timeout(tmp_path):
    res = _spawn(_overlap_workers.dead_peer, tmp_path)
    kind, text = res["error"]
    assert kind == "DistBackendError"
    assert "all_reduce" in text
    assert res["seconds"] < 3 + 5  # the group's timeout, and slack for a loaded machine
    assert res["threads"] == ["ember_mpi_progress"]


def test_exit_without_destroy_stops_the_thread(tmp_path):
    results = spawn2(tmp_path, _overlap_workers.exit_with_thread, "ember")  # both exit 0
    assert [r["threads"] for r in results] == [["ember_mpi_progress"]] * 2


def test_world_of_one_runs_no_thread(tmp_path):
    res = _spawn(_overlap_workers.world_of_one, tmp_path, nprocs=1)
    assert res["threads"] == []
    np.testing.assert_allclose(res["grad"], np.full((2, 4), 6.0))  # two steps of 3 rows
