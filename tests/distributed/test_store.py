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
