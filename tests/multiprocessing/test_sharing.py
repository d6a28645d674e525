"""ember.multiprocessing: tensors cross processes as shared memory."""

import os

import pytest

import ember
import ember.multiprocessing as mp


def _add_one(q_in, q_out):
    t = q_in.get()
    t.add_(1)
    q_out.put(("done", t.is_shared()))


def _receive_twice(q, out):
    a = q.get()
    b = q.get()
    a[0] = 42
    out.put((b[0].item(), b.data_ptr() - a.data_ptr()))


def _parameter_update(model, steps):
    with ember.no_grad():
        for _ in range(steps):
            for p in model.parameters():
                p.add_(1)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_receiver_writes_are_visible_to_sender(method):
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    t = ember.zeros(5)
    p = ctx.Process(target=_add_one, args=(q_in, q_out))
    p.start()
    q_in.put(t)
    status, shared = q_out.get(timeout=60)
    p.join(timeout=60)
    assert status == "done" and shared
    assert t.tolist() == [1.0] * 5 and t.is_shared()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_storage_received_twice_maps_same_memory(method):
    ctx = mp.get_context(method)
    q, out = ctx.Queue(), ctx.Queue()
    base = ember.arange(6.0)
    p = ctx.Process(target=_receive_twice, args=(q, out))
    p.start()
    q.put(base)
    q.put(base[2:])
    value, offset = out.get(timeout=60)
    p.join(timeout=60)
    assert offset == 2 * 4
    assert base[0].item() == 42


def test_non_leaf_requiring_grad_is_refused():
    q = mp.Queue()
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Cowardly refusing"):
        from multiprocessing.reduction import ForkingPickler

        ForkingPickler.dumps(x * 2)
    q.close()


def test_share_memory_keeps_views_and_module_share_memory():
    t = ember.arange(4.0)
    v = t[1:]
    t.share_memory_()
    assert t.is_shared() and v.is_shared()
    v.mul_(2)
    assert t.tolist() == [0.0, 2.0, 4.0, 6.0]
    m = ember.nn.Linear(2, 2)
    w = m.weight
    m.share_memory()
    assert m.weight is w and all(p.is_shared() for p in m.parameters())


def test_hogwild_updates_one_shared_model():
    model = ember.nn.Linear(3, 2)
    with ember.no_grad():
        for p in model.parameters():
            p.zero_()
    model.share_memory()
    procs = [mp.Process(target=_parameter_update, args=(model, 5)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert model.bias.tolist() == [10.0, 10.0]


def _fail(i):
    if i == 1:
        raise ValueError("boom in 1")


def _ok(i, path):
    with open(f"{path}/{i}", "w") as f:
        f.write(str(i))


def test_spawn_runs_and_reports_failures(tmp_path):
    mp.spawn(_ok, args=(str(tmp_path),), nprocs=2)
    assert sorted(os.listdir(tmp_path)) == ["0", "1"]
    with pytest.raises(mp.ProcessRaisedException, match="boom in 1"):
        mp.spawn(_fail, nprocs=2)


def test_file_system_strategy_round_trip_leaves_no_files():
    ctx = mp.get_context("fork")
    mp.set_sharing_strategy("file_system")
    try:
        q_in, q_out = ctx.Queue(), ctx.Queue()
        t = ember.zeros(3)
        p = ctx.Process(target=_add_one, args=(q_in, q_out))
        p.start()
        q_in.put(t)
        assert q_out.get(timeout=60)[0] == "done"
        p.join(timeout=60)
        assert t.tolist() == [1.0, 1.0, 1.0]
    finally:
        mp.set_sharing_strategy("file_descriptor")
    leftovers = [n for n in os.listdir("/dev/shm") if n.startswith(f"ember_{os.getpid()}-")]
    del t
    import gc

    gc.collect()
    leftovers = [n for n in os.listdir("/dev/shm") if n.startswith(f"ember_{os.getpid()}-")]
    assert leftovers == []
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}


def _double_in_place(t):
    t.mul_(2)
    return t.sum().item()


def test_pool_workers_share_argument_tensors():
    t = ember.ones(4)
    with mp.get_context("fork").Pool(2) as pool:
        results = pool.map(_double_in_place, [t, t[:2]])
    assert len(results) == 2 and t.is_shared()
    # both workers doubled the same shared memory: the first half twice, the rest once
    assert t.tolist() == [4.0, 4.0, 2.0, 2.0]
