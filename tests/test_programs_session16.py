"""Real public programs run unchanged (issues 17 and 21, session 16): every model of
kuangliu/pytorch-cifar (``models/``), karpathy/build-nanogpt's ``train_gpt2.py`` and
pytorch/examples' ``regression``, from copies in ``tests/compat/programs/`` whose first line
names the repository, path and commit (train_gpt2.py has no flags: its lines marked EDIT make
it tiny and CPU-only).

The CIFAR models are driven by ``pytorch_cifar/train_models.py`` (one training step as the
repository's main.py takes it). In float64 every model's loss, gradients and output after the
step equal torch's to rounding; in float32 the first loss equals torch's within float
tolerance (a step with batch-norm over two images amplifies float32 rounding far beyond it, so
later float32 numbers are not compared).

build-nanogpt runs under autocast to bfloat16: its losses equal torch's within bfloat16
rounding; its samples are not compared token by token (top-k over bfloat16 probabilities has
many ties, which torch orders as its partial sort leaves them).
"""

import json
import os
import re
import shutil

import numpy as np
import pytest

from tests.conftest import HAS_TORCH
from tests.test_programs_session15 import PROGRAMS, command, run, workdir

# -- kuangliu/pytorch-cifar: every model, one SGD step -------------------------------------

#: the models by group (a few per test; ShuffleNetG2/G3 fail to build under torch too:
#: ``out_planes/4`` is a float under Python 3)
CIFAR_MODELS = {
    "resnet_vgg": ["LeNet()", "VGG('VGG11')", "ResNet18()", "PreActResNet18()"],
    "googlenet_densenet": ["GoogLeNet()", "densenet_cifar()", "MobileNet()"],
    "mobile_senet": ["MobileNetV2()", "ShuffleNetV2(0.5)", "SENet18()", "EfficientNetB0()"],
    "regnet_dpn": ["RegNetX_200MF()", "RegNetY_400MF()", "DPN26()"],
    "dla": ["DLA()", "PNASNetA()"],
    "simple_dla": ["SimpleDLA()", "PNASNetB()"],
    "resnext": ["ResNeXt29_2x64d()"],
}

_LINE = re.compile(r"^(.+) (\(2, 10\)) (\S+) (\S+)$")


def cifar_run(tmp_path, fw, dtype, names):
    """Run the driver under ``fw``: ``([(name, loss, after-step sum)], [gradients])``."""
    root = workdir(tmp_path, "pytorch_cifar", f"{fw}-{dtype}")
    out = run(command(fw, "train_models.py", dtype, *names), cwd=root, timeout=600)
    rows = [_LINE.match(line).groups() for line in out.splitlines()]
    assert [r[0] for r in rows] == names
    grads = [dict(np.load(root / f"grads_{i}.npz")) for i in range(len(names))]
    return [(r[0], float(r[2]), float(r[3])) for r in rows], grads


@pytest.mark.parametrize("group", sorted(CIFAR_MODELS))
def test_pytorch_cifar_models_float64(tmp_path, group):
    names = CIFAR_MODELS[group]
    mine, my_grads = cifar_run(tmp_path, "ember", "float64", names)
    for (_, loss, after), grads in zip(mine, my_grads):
        assert 0.5 < loss < 10 and np.isfinite(after)
        assert grads and all(np.isfinite(g).all() for g in grads.values())
    if not HAS_TORCH:
        return
    theirs, their_grads = cifar_run(tmp_path, "torch", "float64", names)
    for (name, loss, after), (_, t_loss, t_after), grads, t_grads in zip(
            mine, theirs, my_grads, their_grads):
        assert loss == pytest.approx(t_loss, rel=1e-12), name
        assert after == pytest.approx(t_after, rel=1e-8, abs=1e-8), name
        assert grads.keys() == t_grads.keys()
        # a conv bias ahead of a batch norm has a gradient of zero up to rounding: compare
        # each gradient on the scale of the model's largest
        scale = max(np.abs(g).max() for g in t_grads.values())
        for key in grads:
            np.testing.assert_allclose(grads[key], t_grads[key], rtol=1e-7,
                                       atol=1e-10 * scale, err_msg=f"{name} {key}")


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_pytorch_cifar_models_float32_first_loss(tmp_path):
    names = ["LeNet()", "MobileNet()", "ShuffleNetV2(0.5)", "EfficientNetB0()", "PNASNetA()"]
    mine, _ = cifar_run(tmp_path, "ember", "float32", names)
    theirs, _ = cifar_run(tmp_path, "torch", "float32", names)
    for (name, loss, _), (_, t_loss, _) in zip(mine, theirs):
        # float32 sums in another order (torch's oneDNN convolutions and batch norms take
        # AVX-512 on some CPUs): MobileNet's first loss 2.3e-6 apart on an AMD EPYC with it
        assert loss == pytest.approx(t_loss, rel=1e-5), name


# -- karpathy/build-nanogpt: train_gpt2.py ----------------------------------------------------

BUILD_NANOGPT = PROGRAMS / "build_nanogpt"


def build_nanogpt_workdir(tmp_path, name):
    """A copy of build-nanogpt's folder with what its downloads would have written: one
    train and one val shard of uint16 GPT-2 token ids in fineweb.py's ``.npy`` form, and a
    few HellaSwag examples in the ``hellaswag_val.jsonl`` form hellaswag.py reads."""
    root = tmp_path / name / "build_nanogpt"
    shutil.copytree(BUILD_NANOGPT, root, ignore=shutil.ignore_patterns("standins"))
    rng = np.random.default_rng(0)
    (root / "edu_fineweb10B").mkdir()
    for split, index in (("val", 0), ("train", 1)):
        np.save(root / "edu_fineweb10B" / f"edufineweb_{split}_{index:06d}.npy",
                rng.integers(0, 50257, 4096).astype(np.uint16))
    (root / "hellaswag").mkdir()
    endings = ["is using wrap.", "is ripping tiles off.", "holds a cube.", "starts roofing."]
    (root / "hellaswag" / "hellaswag_val.jsonl").write_text("".join(
        json.dumps({"ind": i, "ctx": f"A man is sitting on roof {i}. he", "label": i % 4,
                    "endings": endings}) + "\n" for i in range(3)))
    return root


def build_nanogpt_env():
    """PYTHONPATH with the tiktoken and transformers stand-ins (neither is installed here)."""
    paths = [str(BUILD_NANOGPT / "standins"), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}


_STEP = re.compile(r"step +(\d+) \| loss: (\d+\.\d+) \| lr (\S+) \| norm: (\d+\.\d+) \| dt")
_VAL = re.compile(r"validation loss: (\d+\.\d+)")
_HELLA = re.compile(r"HellaSwag accuracy: (\d+)/(\d+)=")
_SAMPLE = re.compile(r"rank (\d) sample (\d): Hello, I'm a language model,")


def build_nanogpt_report(out):
    """What train_gpt2.py printed, read line-free (two ranks' writes may interleave):
    ``{"steps": [(step, loss, lr, norm)], "val": [...], "hella": [...], "samples": [...]}``."""
    return {"steps": [(int(s), float(loss), float(lr), float(norm))
                      for s, loss, lr, norm in _STEP.findall(out)],
            "val": [float(v) for v in _VAL.findall(out)],
            "hella": _HELLA.findall(out),
            "samples": sorted(_SAMPLE.findall(out))}


def assert_build_nanogpt_close(mine, theirs):
    # autocast runs the linear layers in bfloat16: GEMMs that add in another order round a
    # few outputs to a neighbouring bfloat16, and the losses move in the 6th digit
    assert [s[0] for s in mine["steps"]] == [s[0] for s in theirs["steps"]] == [0, 1, 2]
    np.testing.assert_allclose(np.array(mine["steps"]), np.array(theirs["steps"]), rtol=2e-5,
                               atol=2e-4)
    np.testing.assert_allclose(mine["val"], theirs["val"], atol=2e-4)
    assert mine["hella"] == theirs["hella"] and mine["samples"] == theirs["samples"]


def test_build_nanogpt_single_process(tmp_path):
    root = build_nanogpt_workdir(tmp_path, "ember")
    out = run(command("ember", "train_gpt2.py"), cwd=root, timeout=600, **build_nanogpt_env())
    assert "using fused AdamW: False" in out  # 'fused' is in AdamW's signature, as in torch
    mine = build_nanogpt_report(out)
    assert [s[0] for s in mine["steps"]] == [0, 1, 2] and len(mine["val"]) == 2
    assert mine["steps"][0][1] == pytest.approx(np.log(50304), abs=0.1)  # untrained
    assert mine["hella"] == [("1", "3"), ("1", "3")]
    assert mine["samples"] == [("0", str(i)) for i in range(4)]
    assert (root / "log" / "model_00002.pt").exists()
    if HAS_TORCH:
        theirs_root = build_nanogpt_workdir(tmp_path, "torch")
        theirs = run(command("torch", "train_gpt2.py"), cwd=theirs_root, timeout=600,
                     **build_nanogpt_env())
        assert_build_nanogpt_close(mine, build_nanogpt_report(theirs))


# -- pytorch/examples: regression ------------------------------------------------------------

_POLY = re.compile(r"==> (Learned|Actual) function:\ty = (.+)")


def _coefficients(text):
    return [float(c) for c in re.findall(r"[-+]\d+\.\d+", text)]


def test_pytorch_examples_regression(tmp_path):
    # a linear fit of a random degree-4 polynomial, stopped once a batch's loss is < 1e-3:
    # the batch it stops at depends on every rounding of 32x4 products (torch adds a row's
    # four products in order; ember's BLAS otherwise), so only the target and the fit are
    # compared
    root = workdir(tmp_path, "pytorch_examples/regression", "ember")
    out = run(command("ember", "seeded_run.py", "main.py"), cwd=root)
    loss, batches = re.search(r"Loss: (\d\.\d{6}) after (\d+) batches", out).groups()
    assert float(loss) < 1e-3 and int(batches) > 1
    functions = dict(_POLY.findall(out))
    learned, actual = _coefficients(functions["Learned"]), _coefficients(functions["Actual"])
    assert len(learned) == len(actual) == 5
    np.testing.assert_allclose(learned, actual, atol=0.3)
    if HAS_TORCH:
        theirs_root = workdir(tmp_path, "pytorch_examples/regression", "torch")
        theirs = run(command("torch", "seeded_run.py", "main.py"), cwd=theirs_root)
        assert functions["Actual"] == dict(_POLY.findall(theirs))["Actual"]
