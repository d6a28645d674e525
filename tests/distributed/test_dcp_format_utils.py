"""``distributed.checkpoint.format_utils``: a DCP directory to one file and back, read and
written in both directions with PyTorch."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _state(T):
    return {"model": {"w": T.arange(6.0).reshape(2, 3), "b": T.ones(3)},
            "optim": {"state": {0: {"exp_avg": T.full((2,), 0.5), "step": T.tensor(3.0)}},
                      "param_groups": [{"lr": 0.1, "params": [0]}]},
            "epoch": 7}


def _flat(x, prefix=""):
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    if isinstance(x, list):
        out = {}
        for i, v in enumerate(x):
            out.update(_flat(v, f"{prefix}{i}."))
        return out
    return {prefix[:-1]: x.numpy() if hasattr(x, "numpy") else x}


def _same(a, b):
    fa, fb = _flat(a), _flat(b)
    assert sorted(fa) == sorted(fb)
    for k in fa:
        if isinstance(fa[k], np.ndarray):
            np.testing.assert_array_equal(fa[k], fb[k])
        else:
            assert fa[k] == fb[k], k


def test_torch_dcp_directory_to_one_file(tmp_path):
    import torch.distributed.checkpoint as tdcp
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save as t_convert

    from ember.distributed.checkpoint.format_utils import dcp_to_torch_save

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tdcp.save(_state(torch), checkpoint_id=str(tmp_path / "ckpt"))
    dcp_to_torch_save(tmp_path / "ckpt", tmp_path / "ours.pt")
    t_convert(tmp_path / "ckpt", tmp_path / "theirs.pt")
    ours = ember.load(tmp_path / "ours.pt", weights_only=False)
    theirs = torch.load(tmp_path / "theirs.pt", weights_only=False)
    _same(ours, theirs)
    _same(torch.load(tmp_path / "ours.pt", weights_only=False), theirs)


def test_one_file_to_dcp_directory_and_back(tmp_path):
    import ember.distributed.checkpoint as dcp
    from ember.distributed.checkpoint.format_utils import dcp_to_torch_save, torch_save_to_dcp

    ember.save(_state(ember), tmp_path / "model.pt")
    torch_save_to_dcp(tmp_path / "model.pt", tmp_path / "ckpt")
    target = {"model": {"w": ember.zeros(2, 3), "b": ember.zeros(3)}}
    dcp.load(target, checkpoint_id=tmp_path / "ckpt", no_dist=True)
    np.testing.assert_array_equal(target["model"]["w"].numpy(),
                                  np.arange(6.0).reshape(2, 3))
    dcp_to_torch_save(tmp_path / "ckpt", tmp_path / "back.pt")
    _same(ember.load(tmp_path / "back.pt", weights_only=False), _state(ember))
