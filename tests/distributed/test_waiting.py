"""Waiting on MPI requests (NOTE [ Waiting on MPI ] in ember/distributed/_group.py): progress
calls that move data follow each other at once, idle ones back off into naps, so a rank
blocked on its peer leaves the CPU to others; a dead peer still fails at the timeout."""

import time
import types

import numpy as np
import pytest

from ember.distributed import _group
from ember.distributed._group import DistBackendError
from tests.distributed.conftest import free_port, needs_mpi


class _Engine:
    """A stand-in for ``mpi4py.MPI``: ``Testall`` answers from a script of (seconds of work,
    done) pairs, the last one repeating."""

    class Exception(Exception):  # noqa: N818 (MPI's name)
        def Get_error_string(self):  # noqa: N802
            return "connection reset"

    def __init__(self, script):
        self.script = list(script)
        self.calls = 0
        self.Request = types.SimpleNamespace(Testall=self._testall)

    def _testall(self, requests):
        work, done = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        if isinstance(done, BaseException):
            raise done
        end = time.perf_counter() + work
        while time.perf_counter() < end:  # a progress call that copies a fragment
            pass
        return done


@pytest.fixture
def engine(monkeypatch):
    """Install a scripted engine and record the naps ``_wait_requests`` takes."""
    naps, sleep = [], time.sleep

    def install(script, real_sleep=False):
        eng = _Engine(script)
        monkeypatch.setattr(_group._engine, "mpi", lambda: eng)
        monkeypatch.setattr(_group.time, "sleep",
                            lambda s: (naps.append(s), real_sleep and sleep(s)))
        return eng, naps

    return install


def test_calls_that_move_data_are_not_followed_by_naps(engine):
    busy = 4 * _group._BUSY_CALL
    eng, naps = engine([(busy, False)] * 200 + [(0.0, True)])
    _group._wait_requests(["req"], 10.0, "all_reduce")
    assert eng.calls == 201 and naps == []


def test_idle_calls_spin_briefly_then_nap_within_bounds(engine):
    idle = _group._IDLE_SPINS
    eng, naps = engine([(0.0, False)] * (idle + 40) + [(0.0, True)])
    _group._wait_requests(["req"], 10.0, "all_reduce")
    assert eng.calls == idle + 41
    # one nap per idle call after the spin (fewer where a preempted call looked busy)
    assert 0 < len(naps) <= 40
    assert all(_group._NAP_MIN <= n <= _group._NAP_MAX for n in naps)


def test_a_transfer_after_naps_runs_without_naps(engine):
    idle, busy = _group._IDLE_SPINS, 4 * _group._BUSY_CALL
    eng, naps = engine([(0.0, False)] * (idle + 5) + [(busy, False)] * 30 + [(0.0, True)])
    _group._wait_requests(["req"], 10.0, "all_reduce")
    assert len(naps) <= 5


def test_naps_grow_with_the_time_waited_and_stay_bounded(engine):
    eng, naps = engine([(0.0, False)] * (_group._IDLE_SPINS + 40) + [(0.0, True)],
                       real_sleep=True)
    _group._wait_requests(["req"], 10.0, "all_reduce")
    assert _group._NAP_MIN <= min(naps) and max(naps) <= _group._NAP_MAX
    # a quarter of the time waited, not a fixed spin
    assert naps[-1] > 4 * naps[0] or naps[-1] == _group._NAP_MAX


def test_dead_peer_times_out_with_naps(engine):
    engine([(0.0, False)], real_sleep=True)
    t = time.perf_counter()
    with pytest.raises(DistBackendError, match="all_reduce: timed out after 0.2 s"):
        _group._wait_requests(["req"], 0.2, "all_reduce")
    assert 0.2 <= time.perf_counter() - t < 9.0  # (a loaded machine may pause it seconds)


def test_timeout_holds_while_calls_keep_working(engine):
    engine([(4 * _group._BUSY_CALL, False)])
    with pytest.raises(DistBackendError, match="timed out after 0.1 s"):
        _group._wait_requests(["req"], 0.1, "all_reduce")


def test_broken_connection_raises_dist_backend_error(engine):
    engine([(0.0, False), (0.0, _Engine.Exception())])
    with pytest.raises(DistBackendError, match="communication failed .connection reset."):
        _group._wait_requests(["req"], 10.0, "broadcast")


def test_no_requests_returns_at_once(engine):
    eng, naps = engine([(0.0, False)])
    _group._wait_requests([], 1.0, "barrier")
    assert eng.calls == 0 and naps == []


def _blocked_worker(rank, init_method, out_dir, late):
    """Rank 1 reaches a 4 MB all-reduce ``late`` seconds after rank 0; rank 0 records how
    much CPU its wait used."""
    import datetime
    import os
    import pickle

    import ember
    import ember.distributed as dist

    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    t = ember.ones(1 << 20)
    dist.all_reduce(t)  # connected and warm
    if rank == 1:
        time.sleep(late)
    wall, cpu = time.perf_counter(), time.thread_time()
    dist.all_reduce(t)
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump({"wall": wall, "cpu": cpu, "value": t.numpy().copy()}, f)
    dist.destroy_process_group()


@needs_mpi
def test_rank_blocked_on_its_peer_leaves_the_cpu(tmp_path):
    """Polling with ``sleep(0)`` took ~0.2 s of CPU over this 1.5 s wait; napping ~0.03 s
    (generous bound: 8% of the wait)."""
    import ember.multiprocessing as mp
    from tests.distributed.conftest import load

    mp.spawn(_blocked_worker, args=(f"tcp://127.0.0.1:{free_port()}", str(tmp_path), 1.5),
             nprocs=2)
    r0, r1 = load(tmp_path)
    for r in (r0, r1):
        np.testing.assert_array_equal(r["value"], np.full(1 << 20, 4.0, np.float32))
    assert r0["wall"] > 1.0
    assert r0["cpu"] < 0.08 * r0["wall"], r0
