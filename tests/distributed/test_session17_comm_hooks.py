"""DDP communication hooks and collective Futures on 2 processes, against PyTorch's gloo:
a hook runs on the thread that runs backward, its ``then`` callbacks on the progress
thread (inline when the Future was already complete), also when nobody waits; a
callback's error reaches ``backward()`` as PyTorch's RuntimeError and the next iteration
trains; a hook's own error reaches ``backward()`` unchanged and the next forward refuses
(NOTE [ Hook futures on the progress thread ] in ``ember/distributed/_progress.py``).
"""

import numpy as np
import pytest

from ember.distributed import _progress
from tests.distributed import _session17_workers as workers
from tests.distributed.conftest import needs_mpi, spawn2

pytest.importorskip("torch")

pytestmark = needs_mpi

ON_THREAD = _progress.ENABLED  # EMBER_DDP_PROGRESS_THREAD=0: callbacks run when waited


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("comm_hooks")
    return (spawn2(tmp, workers.comm_hook_threads, "ember"),
            spawn2(tmp, workers.comm_hook_threads, "torch"))


@pytest.mark.parametrize("rank", [0, 1])
def test_hook_errors_reach_backward_as_in_torch(runs, rank):
    ours, theirs = runs[0][rank]["ddp"], runs[1][rank]["ddp"]
    assert ours["outcomes"] == theirs["outcomes"]
    assert ours["outcomes"][2].startswith("RuntimeError: Got the following error when running "
                                          "the callback: ValueError: boom in cb")
    assert ours["outcomes"][3] == "KeyError: 'boom in hook'"
    assert ours["outcomes"][4].startswith("RuntimeError: Expected to have finished reduction")
    assert len(ours["grads"]) == len(theirs["grads"]) == 2
    for a, b in zip(ours["grads"], theirs["grads"]):
        assert a.keys() == b.keys()
        for name in b:
            np.testing.assert_allclose(a[name], b[name], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fw", [0, 1], ids=["ember", "torch"])
@pytest.mark.parametrize("rank", [0, 1])
def test_hooks_on_backward_thread_callbacks_off_it(runs, fw, rank):
    log = runs[fw][rank]["ddp"]["log"]
    hooks = [e for e in log if e[0] == "hook"]
    assert hooks and all(on_main for _, _, _, on_main, _ in hooks)
    done_at_then = {(it, i): done for kind, it, i, _, done in log if kind == "then"}
    callbacks = [e for e in log if e[0] == "cb"]
    # every bucket's callback ran, the one nobody waited for (iteration 3) included
    assert {(it, i) for _, it, i, _, _ in callbacks} >= set(done_at_then)
    assert (3, 0) in done_at_then
    if fw == 0 and not ON_THREAD:
        return
    for _, it, i, on_main, _ in callbacks:
        # on the backward thread only when the Future was complete when then() was called
        assert not on_main or done_at_then.get((it, i), True), (it, i)


@pytest.mark.parametrize("rank", [0, 1])
def test_future_chains_as_in_torch(runs, rank):
    ours, theirs = runs[0][rank]["chain"], runs[1][rank]["chain"]
    np.testing.assert_array_equal(ours["value"], theirs["value"])
    assert [name for name, _ in ours["seen"]] == ["first", "second"]
    assert ours["error"] == theirs["error"]
    assert ours["error"].startswith("Got the following error when running the callback: "
                                    "RuntimeError: Got the following error when running the "
                                    "callback: ZeroDivisionError")
    if ON_THREAD and not ours["done_at_then"]:
        assert not ours["seen"][0][1]  # the first callback ran on the progress thread


@pytest.mark.parametrize("rank", [0, 1])
def test_unfinished_reduction_names_the_parameters_as_torch(runs, rank):
    ours, theirs = runs[0][rank]["unused"], runs[1][rank]["unused"]
    assert ours == theirs
    assert "Parameter indices which did not receive grad for rank" in ours[1]


@pytest.mark.parametrize("rank", [0, 1])
def test_register_comm_hook_checks_signature_as_torch(runs, rank):
    ours, theirs = runs[0][rank]["checks"], runs[1][rank]["checks"]
    assert ours == theirs
    assert ours["other_name"] == "KeyError: 'bucket'"
    assert ours["bad_bucket"].startswith("ValueError")
    assert ours["good"].startswith("RuntimeError: register_comm_hook or")
    assert ours["bad_return:record"][1] == 1
