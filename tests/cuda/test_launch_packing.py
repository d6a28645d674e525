"""NOTE [ Launching with one driver call ] (ember/_kernels/_cuda.py): the argument slots a
launch hands to cuLaunchKernel, read back through a stand-in for the driver -- runs on any
machine (no GPU, no CuPy)."""

import ctypes

import numpy as np
import pytest

from ember._kernels import _cuda


class _FakeArray:
    """Stands in for cupy.ndarray: ``.data.ptr``."""

    def __init__(self, ptr):
        self.data = type("P", (), {"ptr": ptr})()


class _FakeFunction:
    """Stands in for cupy.RawKernel: ``.kernel.ptr`` on the current device."""

    kernel = type("K", (), {"ptr": 0xF00})()

    def __init__(self):
        self.slow_calls = []

    def __call__(self, grid, block, args, shared_mem=0):
        self.slow_calls.append(args)


@pytest.fixture
def launched(monkeypatch):
    calls = []

    def launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        addresses = np.ctypeslib.as_array((ctypes.c_uint64 * 6).from_address(params))
        raw = [ctypes.string_at(int(a), 8) for a in addresses]
        calls.append(((f, gx, gy, gz, bx, by, bz, shared, stream, extra), raw))

    stream = type("S", (), {"ptr": 77})()
    monkeypatch.setattr(_cuda, "_launch_env", [_FakeArray, launch, lambda: stream, lambda: 0])
    return calls


def test_arguments_land_in_slots_by_type(launched):
    f = _FakeFunction()
    k = _cuda._Launch(f)
    k((3, 2), (128,), (_FakeArray(0x1234), np.int64(-5), np.float32(1.5), np.int32(7),
                       np.float64(0.25), _cuda._NULL), shared_mem=64)
    (head, raw), = launched
    assert head == (0xF00, 3, 2, 1, 128, 1, 1, 64, 77, 0)
    assert np.frombuffer(raw[0], np.uint64)[0] == 0x1234
    assert np.frombuffer(raw[1], np.int64)[0] == -5
    assert np.frombuffer(raw[2][:4], np.float32)[0] == 1.5
    assert np.frombuffer(raw[3][:4], np.int32)[0] == 7
    assert np.frombuffer(raw[4], np.float64)[0] == 0.25
    assert np.frombuffer(raw[5], np.uint64)[0] == 0
    assert not f.slow_calls


def test_grid_and_block_given_as_numbers(launched):
    _cuda._Launch(_FakeFunction())(5, 256, (np.int64(1),))
    assert launched[0][0][1:7] == (5, 1, 1, 256, 1, 1)


def test_other_argument_types_take_cupys_launch(launched):
    f = _FakeFunction()
    _cuda._Launch(f)((1,), (1,), (np.int64(1), 3.0))
    assert not launched and f.slow_calls == [(np.int64(1), 3.0)]


def test_many_arguments_grow_the_buffer(launched):
    k = _cuda._Launch(_FakeFunction())
    k((1,), (1,), tuple(np.int64(i) for i in range(40)))
    assert len(k.local.buf[0]) >= 8 * 40
