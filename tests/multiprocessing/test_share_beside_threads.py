"""Sharing a fresh tensor's storage makes no heap scan (NOTE [ A heap scan beside other
threads ] in ember/multiprocessing/_shared.py): the scan's ``gc.get_objects()`` list made a
tuple another thread was building from an iterator fail with CPython's SystemError, as a
DataLoader worker's queue thread pickling a batch did to the worker's next collate."""

import threading
import time

import numpy as np

import ember
from ember.multiprocessing import _shared
from ember.multiprocessing.reductions import reduce_tensor


def _spy(monkeypatch):
    calls = []
    real = _shared._views_of
    monkeypatch.setattr(_shared, "_views_of", lambda root: calls.append(1) or real(root))
    return calls


def test_a_fresh_tensor_is_shared_without_a_scan(monkeypatch):
    calls = _spy(monkeypatch)
    t = ember.from_numpy(np.arange(16, dtype=np.float32))
    _shared.share_storage(t)
    q = ember.ones(5)
    reduce_tensor(q)   # the queue's pickling path
    assert calls == [] and t.is_shared() and q.is_shared()
    assert t.tolist() == list(range(16)) and q.tolist() == [1.0] * 5


def test_views_keep_the_scan_and_their_aliasing(monkeypatch):
    calls = _spy(monkeypatch)
    x = ember.zeros(10)
    y = x[2:5]
    _shared.share_storage(x)
    x.add_(1)
    assert len(calls) == 1 and y.is_shared() and y.tolist() == [1.0] * 3
    z = ember.zeros(10)
    v = z[1:4]
    _shared.share_storage(v)   # sharing a view moves its root's other holders too
    z.add_(2)
    assert len(calls) == 2 and z.is_shared() and v.tolist() == [2.0] * 3
    other = ember.zeros(4)
    same = ember.Tensor._make_subclass(ember.Tensor, other) if hasattr(
        ember.Tensor, "_make_subclass") else None
    if same is not None and same._data is other._data:
        _shared.share_storage(other)   # another tensor holding the same array: scanned
        assert len(calls) == 3 and same.is_shared()


def test_sharing_beside_a_thread_building_tuples():
    errors = []
    stop = threading.Event()

    def share():
        while not stop.is_set():
            _shared.share_storage(ember.from_numpy(np.ones(16, np.float32)))

    th = threading.Thread(target=share)
    th.start()
    try:
        end = time.monotonic() + 3.0
        strides = (4, 8, 12, 16, 20, 24, 28, 32)
        while time.monotonic() < end:
            for _ in range(1000):
                try:
                    tuple(s // 4 for s in strides)
                except SystemError as e:   # pragma: no cover - the bug
                    errors.append(e)
    finally:
        stop.set()
        th.join()
    assert errors == []
