"""RPC's wire in one process: large buffers out of band, received into fresh writable
memory (NOTE [ Receive buffers on small pages ] in ember/distributed/rpc/_wire.py)."""

import threading
from multiprocessing.connection import Client, Listener

import numpy as np

import ember
from ember.distributed.rpc import _wire


def test_receive_buffer_large_is_writable_and_sized():
    buf = _wire._receive_buffer(5 << 20)  # above the size that is mapped
    assert buf.dtype == np.uint8 and buf.shape == (5 << 20,) and buf.flags.writeable
    buf[-1] = 7
    assert buf[-1] == 7


def test_receive_buffer_small_is_plain_array():
    buf = _wire._receive_buffer(100)
    assert buf.shape == (100,) and buf.flags.writeable


def test_wire_round_trip_large_tensor_over_tcp():
    with Listener(("127.0.0.1", 0), authkey=b"k") as listener:
        got = {}

        def serve():
            wire = _wire._Wire(listener.accept())
            head, data, buffers = wire.recv()
            got["head"], got["value"] = head, _wire._loads(data, buffers)
            wire.close()

        t = threading.Thread(target=serve)
        t.start()
        wire = _wire._Wire(Client(listener.address, authkey=b"k"))
        big = ember.arange(1_500_000, dtype=ember.float32)  # 6 MB: out of band
        wire.send(("call", 3), _wire._dumps({"big": big, "small": ember.ones(3), "n": 5}))
        t.join(30)
        wire.close()
    value = got["value"]
    assert got["head"] == ("call", 3) and value["n"] == 5
    assert ember.equal(value["big"], big) and ember.equal(value["small"], ember.ones(3))
    value["big"].add_(1)  # the received tensor owns writable memory
    assert value["big"][0].item() == 1.0 and big[0].item() == 0.0
