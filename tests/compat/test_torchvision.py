"""The real torchvision under the ``torch`` alias, compared with the real torch.

``torchvision_cases/cases.py`` runs twice: on ember (``python -m ember.compat.run``) and on
torch. The installed torchvision's native library was built for another torch release, so
the torch run first imports ``torchvision_cases/torch_shim.py``, which declares torchvision's
operators for torch with reference kernels written in torch (torchvision's own pure-torch
``roi_align``, a greedy ``nms``); the other native operators are compared with their
definitions written in torch (max/mean over bins, ``grid_sample`` for deform_conv2d), with
torch's autograd for the gradients. Models run with the ember run's weights in both.
"""

import glob
import importlib.util
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

# torchvision installed beside a torch it was not built for breaks every library that
# imports it under that torch (transformers, timm, torchmetrics do), so the tests do not
# need it installed: a wheel on disk is unpacked for the two runs alone.
# ``EMBER_TORCHVISION_WHEEL`` names one; else a wheel pip keeps in the machine's local index.
_WHEELS = ([os.environ["EMBER_TORCHVISION_WHEEL"]] if os.environ.get("EMBER_TORCHVISION_WHEEL")
           else sorted(glob.glob("/opt/pypi-more/files/torchvision-0.29.*-cp311-*.whl")))
_HAVE = importlib.util.find_spec("torchvision") is not None or (
    bool(_WHEELS) and sys.version_info[:2] == (3, 11))

pytestmark = [
    pytest.mark.skipif(not _HAVE, reason="torchvision is neither installed nor on disk"),
    pytest.mark.skipif(importlib.util.find_spec("PIL") is None, reason="torchvision needs PIL"),
]

CASES = os.path.join(os.path.dirname(__file__), "torchvision_cases", "cases.py")


def _run(args, **kwargs):
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600,
                       **kwargs)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    return r


def _env_with_torchvision(tmp):
    """The environment for the two runs: the installed torchvision, or the wheel unpacked."""
    env = dict(os.environ)
    if importlib.util.find_spec("torchvision") is None:
        site = tmp / "site"
        with zipfile.ZipFile(_WHEELS[-1]) as whl:
            whl.extractall(site)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(site), root, env.get("PYTHONPATH")) if p)
    return env


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("torchvision")
    env = _env_with_torchvision(out)
    _run(["-m", "ember.compat.run", CASES, "ember", str(out)], env=env)
    _run([CASES, "torch", str(out)], env=env)  # needs the ember run's weights
    return np.load(out / "ember.npz"), np.load(out / "torch.npz")


def _check(results, prefix, rtol=1e-5, atol=1e-6):
    ours, theirs = results
    keys = [k for k in theirs.files if k.startswith(prefix)]
    assert keys, f"no case named {prefix}*"
    for k in keys:
        a, b = ours[k], theirs[k]
        assert a.shape == b.shape and a.dtype == b.dtype, (k, a.shape, b.shape, a.dtype,
                                                            b.dtype)
        if a.dtype.kind == "f":
            scale = max(float(np.abs(b).max()) if b.size else 0.0, 1e-30)
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * scale, err_msg=k)
        else:
            np.testing.assert_array_equal(a, b, err_msg=k)


@pytest.mark.parametrize("prefix", [
    "nms", "batched_nms", "box_iou", "generalized_box_iou", "box_convert", "clip_boxes",
    "remove_small"])
def test_torchvision_box_ops_match_torch(results, prefix):
    _check(results, prefix)


@pytest.mark.parametrize("prefix", ["roi_align_", "multiscale_roi_align", "roi_pool",
                                    "ps_roi_pool", "ps_roi_align"])
def test_torchvision_roi_ops_and_gradients_match_torch(results, prefix):
    _check(results, prefix)


@pytest.mark.parametrize("prefix", ["deform_1_True", "deform_2_True", "deform_1_False"])
def test_torchvision_deform_conv2d_and_gradients_match_torch(results, prefix):
    _check(results, prefix, rtol=1e-9, atol=1e-12)  # float64


@pytest.mark.parametrize("prefix", ["fpn", "focal", "stochastic_depth", "conv_norm_act",
                                    "squeeze_excitation"])
def test_torchvision_layers_and_losses_match_torch(results, prefix):
    _check(results, prefix)


@pytest.mark.parametrize("name", ["resnet", "mobilenet_v3_small", "squeezenet", "densenet",
                                  "vit", "swin", "convnext"])
def test_torchvision_models_outputs_and_gradients_match_torch(results, name):
    _check(results, f"model_{name}", rtol=1e-4, atol=1e-5)


def test_torchvision_fasterrcnn_eval_detections_and_train_losses_match_torch(results):
    _check(results, "det_eval_", rtol=1e-4, atol=1e-5)
    _check(results, "det_train_", rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("prefix", ["v1_", "v2_", "tv_"])
def test_torchvision_transforms_and_tv_tensors_match_torch(results, prefix):
    _check(results, prefix)


@pytest.mark.parametrize("prefix", ["mnist", "cifar", "image_folder", "fakedata"])
def test_torchvision_datasets_from_files_match_torch(results, prefix):
    _check(results, prefix)


@pytest.mark.parametrize("prefix", ["make_grid", "save_image", "draw_boxes"])
def test_torchvision_utils_match_torch(results, prefix):
    _check(results, prefix)


EDGES = r'''
import warnings
import torch, torchvision
from torchvision import ops

assert torchvision.extension._has_ops()
assert any(p.endswith(("_C.so", "_C_stable.so")) for p in torch.ops.loaded_libraries)
print("empty", ops.nms(torch.zeros(0, 4), torch.zeros(0), 0.5).tolist())
# roi_align's native kernel reads nothing beyond -1 (torchvision's pure-torch one clamps)
far = ops.roi_align(torch.rand(1, 1, 4, 4), torch.tensor([[0., -9, -9, -3, -3]]), 2,
                    aligned=True)
print("outside", far.abs().sum().item())
b = torch.tensor([[0., 0, 2, 2], [0, 0, 2, 1.9], [3, 3, 4, 4]], dtype=torch.bfloat16)
with torch.autocast("cpu", dtype=torch.bfloat16):
    print("autocast", ops.nms(b, torch.tensor([0.9, 0.8, 0.7], dtype=torch.bfloat16),
                               0.5).tolist(),
          ops.roi_align(torch.rand(1, 2, 5, 5, dtype=torch.bfloat16),
                        torch.tensor([[0, 0, 0, 3, 3.]], dtype=torch.bfloat16), 2).dtype)
x = torch.rand(1, 1, 5, 5, requires_grad=True)
y = torch.ops.torchvision.roi_align(x, torch.tensor([[0, 0, 0, 3, 3.]]), 1.0, 2, 2, 2, False)
try:
    v = torch.ones(y.shape, requires_grad=True)
    torch.autograd.grad(y, x, v, create_graph=True)[0].sum().backward()
except RuntimeError as e:
    print("double", "not supported" in str(e))
from torchvision.io import read_image
try:
    read_image("missing.png")
except RuntimeError as e:
    print("io", "image extension" in str(e))
'''


def test_torchvision_edges_native_semantics_autocast_and_missing_image_codecs(tmp_path):
    script = tmp_path / "edges.py"
    script.write_text(EDGES)
    r = _run(["-m", "ember.compat.run", str(script)], cwd=tmp_path,
             env=_env_with_torchvision(tmp_path))
    assert r.stdout.split("\n")[:5] == [
        "empty []", "outside 0.0", "autocast [0, 2] torch.bfloat16", "double True",
        "io True"], r.stdout
