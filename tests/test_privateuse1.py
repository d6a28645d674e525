"""The PrivateUse1 story: an out-of-tree device, written as a user would -- a NumPy
subclass for its arrays and a namespace producing them -- renamed, registered through
ember.library and given its methods, then used to train a model with gradients.

Renaming is once per process and adds methods to Tensor and Module, so the scenario runs in
a child process of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class MyArray(np.ndarray):
    """The arrays of the 'mydev' device: NumPy underneath, a type of their own on top."""


class MyNumpy:
    """The array namespace of 'mydev': NumPy's functions, with results as MyArray (ufuncs
    keep the subclass by themselves)."""

    def __getattr__(self, name):
        fn = getattr(np, name)
        if isinstance(fn, (np.ufunc, type)) or not callable(fn):
            return fn

        def call(*args, **kwargs):
            r = fn(*args, **kwargs)
            return r.view(MyArray) if type(r) is np.ndarray else r

        return call


def to_mydev(a):
    """Any backend's array as a MyArray copy."""
    host = a if isinstance(a, np.ndarray) else a.get()
    return np.array(host, copy=True).view(MyArray)


def _scenario():
    """Rename, register, generate the methods, train; report what a test should check."""
    import ember.nn as nn

    report = {"default_name": ember.utils.backend_registration._get_privateuse1_backend_name()}
    ember.utils.rename_privateuse1_backend("mydev")
    ember.utils.rename_privateuse1_backend("mydev")  # the same name again is allowed
    try:
        ember.utils.rename_privateuse1_backend("other")
    except RuntimeError as e:
        report["rename_twice"] = str(e)
    report["devices"] = [str(ember.device("mydev")), str(ember.device("mydev:1")),
                         str(ember.device("privateuseone"))]
    ember.library.register_backend("mydev", MyNumpy(), MyArray, to_mydev,
                                   device_of=lambda a: ember.device("mydev", 0))
    ember.utils.generate_methods_for_privateuse1_backend()
    try:
        ember.utils.generate_methods_for_privateuse1_backend()
    except RuntimeError as e:
        report["generate_twice"] = str(e)
    x = ember.ones(2, 3).mydev()
    report["tensor"] = [str(x.device), x.is_mydev, ember.ones(1).is_mydev,
                        type(x._data).__name__]
    packed = nn.utils.rnn.pack_padded_sequence(ember.randn(4, 2, 3), [4, 2])
    report["packed"] = [packed.mydev().is_mydev, packed.is_mydev]
    try:
        x.mydev("cpu")
    except RuntimeError as e:
        report["wrong_device"] = str(e)

    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    model.mydev()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    X = ember.randn(64, 4).mydev()
    Y = (X * ember.tensor([1.0, -2.0, 0.5, 3.0]).mydev()).sum(1, keepdim=True)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = ((model(X) - Y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    w = model[0].weight
    report["training"] = {"first": losses[0], "last": losses[-1],
                          "loss_device": str(loss.device),
                          "weight": [str(w.device), type(w._data).__name__, w.is_mydev],
                          "grad": [str(w.grad.device), type(w.grad._data).__name__]}
    report["back_to_cpu"] = str(model(X).cpu().device)
    return report


@pytest.fixture(scope="module")
def report():
    code = ("import json; from tests.test_privateuse1 import _scenario; "
            "print(json.dumps(_scenario()))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env=dict(os.environ, PYTHONPATH=ROOT))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_privateuseone_is_a_device_before_renaming():
    assert ember.utils.backend_registration._get_privateuse1_backend_name() == "privateuseone"
    assert ember.device("privateuseone").type == "privateuseone"
    if HAS_TORCH:
        import torch

        assert str(torch.device("privateuseone:1")) == str(ember.device("privateuseone:1"))


def test_rename_makes_the_name_a_device(report):
    assert report["default_name"] == "privateuseone"
    assert report["devices"] == ["mydev", "mydev:1", "mydev"]
    assert report["rename_twice"] == ("ember.utils.rename_privateuse1_backend() has already "
                                      "been set! Current backend: mydev")


def test_generated_methods_move_tensors(report):
    assert report["tensor"] == ["mydev:0", True, False, "MyArray"]
    assert report["wrong_device"] == "Invalid device, must be mydev device"
    assert report["packed"] == [True, False]
    assert "already been registered with is_mydev" in report["generate_twice"]


def test_a_model_trains_on_the_renamed_backend(report):
    t = report["training"]
    assert t["loss_device"] == "mydev:0"
    assert t["weight"] == ["mydev:0", "MyArray", True]
    assert t["grad"] == ["mydev:0", "MyArray"]
    assert t["last"] < 0.1 * t["first"]
    assert report["back_to_cpu"] == "cpu"


def test_rename_rejects_a_name_that_is_not_an_identifier():
    with pytest.raises(ValueError, match="identifier"):
        ember.utils.rename_privateuse1_backend("my-dev")
