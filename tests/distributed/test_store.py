"""Rendezvous stores against PyTorch's: set/get/add/compare_set/delete/timeouts."""

import datetime
import threading

import pytest

import ember.distributed as dist
from tests.distributed.conftest import free_port

try:
    import torch.distributed as tdist

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")


def _script(mod, store):
    store.set("a", "1")
    out = [store.get("a"), store.add("n", 3), store.add("n", 2), store.get("n")]
    out += [store.check(["a"]), store.check(["zz"])]
    out += [store.compare_set("a", "1", "2"), store.compare_set("a", "1", "3"), store.get("a")]
    out += [store.delete_key("a"), store.delete_key("a"), store.num_keys()]
    return out


def _stores(mod, tmp_path, tag):
    return {"hash": lambda: mod.HashStore(),
            "tcp": lambda: mod.TCPStore("127.0.0.1", free_port(), 1, True),
            "file": lambda: mod.FileStore(str(tmp_path / f"{tag}.store"), 1)}


@needs_torch
@pytest.mark.parametrize("kind", ["hash", "tcp", "file"])
def test_store_operations_match_torch(tmp_path, kind):
    ours = _script(dist, _stores(dist, tmp_path, "ours")[kind]())
    theirs = _script(tdist, _stores(tdist, tmp_path, "theirs")[kind]())
    assert ours[:-1] == theirs[:-1]


@pytest.mark.parametrize("kind", ["hash", "tcp", "file"])
def test_store_get_times_out_with_dist_store_error(tmp_path, kind):
    store = _stores(dist, tmp_path, "t")[kind]()
    store.set_timeout(datetime.timedelta(seconds=0.2))
    with pytest.raises(dist.DistStoreError, match="timeout"):
        store.get("missing")


def test_tcp_store_client_sees_master_writes_and_waits():
    master = dist.TCPStore("127.0.0.1", 0, 2, True)
    client = dist.TCPStore("127.0.0.1", master.port, 2, False)
    threading.Timer(0.1, lambda: master.set("late", b"x")).start()
    assert client.get("late") == b"x"


def test_prefix_store_prefixes_keys():
    base = dist.HashStore()
    dist.PrefixStore("p", base).set("k", "v")
    assert base.get("p/k") == b"v"


@needs_torch
def test_dist_store_error_is_runtime_error_as_torch():
    assert issubclass(dist.DistStoreError, RuntimeError)
    assert issubclass(tdist.DistStoreError, RuntimeError)


def _extended_script(store):
    """The rest of torch's store API; exceptions recorded by type."""
    steps = [
        lambda: store.num_keys(), lambda: store.set("a", "1"), lambda: store.append("a", "23"),
        lambda: store.append("fresh", b"x"), lambda: store.get("a"), lambda: store.get("fresh"),
        lambda: store.multi_set(["x", "y"], ["1", b"2"]), lambda: store.multi_get(["y", "x"]),
        lambda: store.has_extended_api(), lambda: store.get(3), lambda: store.add("k", 1.5),
        lambda: store.check("ab"), lambda: store.queue_push("q", "v1"),
        lambda: store.queue_push("q", "v2"), lambda: store.queue_len("q"),
        lambda: store.queue_pop("q"), lambda: store.queue_pop("q", block=False),
        lambda: store.queue_pop("q", block=False), lambda: store.queue_len("none"),
        lambda: store.barrier("bar", 1), lambda: store.num_keys(),
        lambda: type(store.clone()).__name__, lambda: store.clone().get("a"),
    ]
    out = []
    for step in steps:
        try:
            out.append(step())
        except Exception as e:  # noqa: BLE001 -- compared by type with torch's
            out.append(type(e).__name__)
    return out


@needs_torch
@pytest.mark.parametrize("kind", ["hash", "tcp", "file"])
def test_store_extended_api_matches_torch(tmp_path, kind):
    ours = _extended_script(_stores(dist, tmp_path, "ours")[kind]())
    theirs = _extended_script(_stores(tdist, tmp_path, "theirs")[kind]())
    assert ours == theirs


@needs_torch
@pytest.mark.parametrize("kind", ["hash", "tcp", "file"])
def test_store_list_keys_match_torch(tmp_path, kind):
    listed = []
    for mod, tag in ((dist, "ours"), (tdist, "theirs")):
        store = dist.PrefixStore("p", _stores(mod, tmp_path, tag)[kind]()) if mod is dist else \
            tdist.PrefixStore("p", _stores(mod, tmp_path, tag)[kind]())
        store.set("k", "v")
        store.barrier("b", 1)
        listed.append((sorted(store.list_keys()), store.num_keys()))
    assert listed[0] == listed[1]


def test_store_queue_pop_waits_for_a_push_from_another_client():
    master = dist.TCPStore("127.0.0.1", 0, 2, True)
    client = dist.TCPStore("127.0.0.1", master.port, 2, False)
    threading.Timer(0.1, lambda: master.queue_push("jobs", b"j1")).start()
    assert client.queue_pop("jobs") == b"j1"


def test_store_barrier_releases_when_all_threads_arrive():
    store = dist.HashStore()
    other = threading.Thread(target=store.barrier, args=("b", 2))
    other.start()
    store.barrier("b", 2, datetime.timedelta(seconds=60))  # (the other thread may start late
    other.join(60)                                          # on a loaded machine)
    assert not other.is_alive()


def test_store_queue_pop_empty_without_blocking_raises_queue_empty_error():
    with pytest.raises(dist.QueueEmptyError, match="empty"):
        dist.HashStore().queue_pop("q", block=False)


def test_tcp_store_master_left_open_does_not_hang_interpreter_exit():
    import subprocess
    import sys

    # the store package alone (it needs only the standard library): no ember import to wait for
    path = dist._store.__path__[0]
    code = ("import importlib.util as u, sys; spec = u.spec_from_file_location('st', "
            f"{dist._store.__file__!r}, submodule_search_locations=[{path!r}]); "
            "d = sys.modules['st'] = u.module_from_spec(spec); "
            "spec.loader.exec_module(d); s = d.TCPStore('127.0.0.1', 0, 1, True); "
            "s.set('k', 'v'); print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
