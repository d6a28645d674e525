"""The test suite's own guards against results that depend on the run: ports handed to later
servers (NOTE [ Test ports outside the ephemeral range ]) and the global state each test
starts from (NOTE [ Each test starts from the same global state ])."""

import os
import socket

import pytest

import ember
from tests import _ports


def test_free_port_is_bindable_and_outside_the_ephemeral_range():
    lo, hi = _ports._ephemeral_range()
    seen = set()
    for _ in range(20):
        port = _ports.free_port()
        assert not lo <= port <= hi and port not in _ports._HARD_CODED
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
        seen.add(port)
    assert len(seen) == 20  # walked in order: a port just handed out is not handed out again


def test_free_port_skips_a_port_something_listens_on(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        monkeypatch.setattr(_ports, "_ports", [taken, taken])
        monkeypatch.setattr(_ports, "_walk", iter([taken, taken]))
        with pytest.raises(RuntimeError, match="every port in this test worker's slice"):
            _ports.free_port()


@pytest.mark.parametrize("worker", ["gw0", "gw1", "gw2"])
def test_xdist_workers_get_disjoint_port_slices(monkeypatch, worker):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    slices = {}
    for w in ("gw0", "gw1", "gw2"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", w)
        slices[w] = set(_ports._slice())
    mine = slices.pop(worker)
    assert mine and all(not (mine & other) for other in slices.values())


@pytest.mark.parametrize("step", ["change", "check"])
def test_settings_and_environment_are_put_back_after_each_test(step):
    # two steps run in this order (in one process without xdist; split between workers,
    # "check" meets another worker's state, which holds as well)
    from ember._settings import settings

    if step == "change":
        os.environ["EMBER_ISOLATION_PROBE"] = "1"
        ember.set_default_dtype(ember.float64)
        ember.set_grad_enabled(False)
        ember.set_num_threads(1)
        ember.use_deterministic_algorithms(True)
        return
    assert "EMBER_ISOLATION_PROBE" not in os.environ
    assert ember.get_default_dtype() == ember.float32 and ember.is_grad_enabled()
    assert settings.num_threads is None and not ember.are_deterministic_algorithms_enabled()


def test_each_test_draws_the_same_numbers_every_run(request):
    import random
    import zlib

    import numpy as np

    seed = zlib.crc32(request.node.nodeid.encode())
    got = (ember.rand(3).tolist(), np.random.rand(), random.random())
    ember.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    assert got == (ember.rand(3).tolist(), np.random.rand(), random.random())
