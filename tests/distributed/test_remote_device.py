"""``distributed.remote_device._remote_device`` and ``distributed.config`` against torch."""

import pytest

import ember
from ember.distributed import config
from ember.distributed.remote_device import _remote_device

torch = pytest.importorskip("torch")
from torch.distributed.remote_device import _remote_device as _torch_remote_device  # noqa: E402

GOOD = ["worker0/cpu", "rank:1/cuda:0", "cpu", "worker1", "cuda:1", "rank:0/cpu", "rank:1",
        "cuda", "meta", "rank:01/cpu", "worker-0/cpu:0"]
BAD = ["a/b/c", "rank:x/cpu", "", "/cpu", "rank:-1/cpu", "foo:bar", "w:1/cpu", "rank: 1/cpu",
       "Rank:1/cpu", "worker0/foo", "rank:1/"]


def _describe(cls, text):
    d = cls(text)
    return str(d), repr(d), d.worker_name(), d.rank(), str(d.device())


@pytest.mark.parametrize("text", GOOD)
def test_remote_device_parses_as_torch(text):
    assert _describe(_remote_device, text) == _describe(_torch_remote_device, text)


@pytest.mark.parametrize("text", BAD)
def test_remote_device_bad_string_raises_as_torch(text):
    with pytest.raises(Exception) as theirs:
        _torch_remote_device(text)
    with pytest.raises(type(theirs.value)) as ours:
        _remote_device(text)
    if isinstance(theirs.value, ValueError):
        assert str(ours.value) == str(theirs.value)


def test_remote_device_from_device_and_bad_type():
    assert str(_remote_device(ember.device("cpu"))) == str(_torch_remote_device(
        torch.device("cpu")))
    with pytest.raises(TypeError, match="Invalid type for remote_device"):
        _remote_device(3)


def test_remote_device_equality_and_hash():
    assert _remote_device("rank:1/cpu") == _remote_device("rank:01/cpu")
    assert hash(_remote_device("w/cpu")) == hash(_remote_device("w/cpu"))
    assert _remote_device("w/cpu") != _remote_device("w/cuda:0")
    assert _remote_device("w/cpu") != "w/cpu"


def test_distributed_config_matches_torch():
    import torch.distributed.config as theirs

    assert sorted(config.__all__) == sorted(theirs.__all__)
    for name in theirs.__all__:
        assert getattr(config, name) == getattr(theirs, name)
    with config.patch(use_torchcomms=True):
        assert config.use_torchcomms is True
    assert config.use_torchcomms is False
