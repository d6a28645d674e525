"""DistributedDataParallel's smaller methods in a world of one process, against PyTorch's
gloo DDP in the same process (its own world of one)."""

import warnings

import numpy as np
import pytest

import ember
import ember.distributed as dist
from tests.distributed.conftest import free_port, needs_mpi

torch = pytest.importorskip("torch")
tdist = pytest.importorskip("torch.distributed")

pytestmark = needs_mpi


@pytest.fixture(scope="module")
def worlds():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                             world_size=1)
    yield
    dist.destroy_process_group()
    tdist.destroy_process_group()


def _both(make):
    """``make(fw)`` for ember and torch."""
    return make(ember), make(torch)


def _ddp(fw, bn=True, **kw):
    layers = [fw.nn.Linear(2, 2)] + ([fw.nn.BatchNorm1d(2)] if bn else [])
    return fw.nn.parallel.DistributedDataParallel(fw.nn.Sequential(*layers), **kw)


@pytest.mark.parametrize("bn,sync", [(True, True), (False, True), (True, False)])
@pytest.mark.filterwarnings("ignore:`broadcast_buffers` is deprecated")
def test_ddp_will_sync_module_buffers_as_torch(worlds, bn, sync):
    ours, theirs = _both(lambda fw: _ddp(fw, bn, broadcast_buffers=sync))
    assert ours.will_sync_module_buffers() == theirs.will_sync_module_buffers()


def test_ddp_to_kwargs_wraps_inputs_as_torch(worlds):
    x = np.ones((3, 2), np.float32)

    def shape(fw):
        d = _ddp(fw)
        (ins,), (kws,) = d.to_kwargs((fw.from_numpy(x), 5), {"a": fw.from_numpy(x)}, 0)
        return [type(v).__name__ for v in ins], sorted(kws), kws["a"].numpy().tolist()

    ours, theirs = _both(shape)
    assert ours == (["Tensor", "int"], ["a"], x.tolist()) and ours == theirs


def test_ddp_gather_cpu_raises_as_torch(worlds):
    for fw in (ember, torch):
        with pytest.raises(AssertionError, match="not implemented for CPU tensors"):
            _ddp(fw).gather([fw.ones(1)], -1)


def test_ddp_set_static_graph_twice_warns_as_torch(worlds):
    def messages(fw):
        d = _ddp(fw, find_unused_parameters=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            d._set_static_graph()
            d._set_static_graph()
        return d.static_graph, d._get_ddp_logging_data()["static_graph"], \
            [str(m.message) for m in w]

    ours, theirs = _both(messages)
    assert ours == theirs and len(ours[2]) == 2


def test_ddp_broadcast_buffers_warning_matches_torch(worlds):
    def message(fw):
        with pytest.warns(FutureWarning) as w:
            _ddp(fw, broadcast_buffers=False)
        return [str(m.message) for m in w]

    ours, theirs = _both(message)
    assert ours == theirs


def test_ddp_logging_sample_rate_below_one_raises_value_error(worlds):
    with pytest.raises(ValueError, match="sample rate"):
        _ddp(ember)._set_ddp_runtime_logging_sample_rate(0)


@pytest.mark.parametrize("kw", [{"device_ids": [0]}, {"output_device": 1},
                                {"device_ids": [0, 1]}])
def test_ddp_device_ids_on_cpu_module_raise_as_torch(worlds, kw):
    def message(fw):
        with pytest.raises(ValueError) as e:
            _ddp(fw, bn=False, **kw)
        return str(e.value)

    ours, theirs = _both(message)
    assert ours == theirs


@pytest.mark.parametrize("kw", [{"device_ids": []}, {"output_device": 0}])
def test_ddp_empty_device_ids_on_cpu_module_accepted(worlds, kw):
    assert _ddp(ember, bn=False, **kw).device_ids == kw.get("device_ids")
