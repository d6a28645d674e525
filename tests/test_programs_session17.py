"""Real public programs run unchanged (issues 17 and 21, session 17): pytorch/examples'
``super_resolution``, ``fast_neural_style``, ``siamese_network``, ``gat``,
``language_translation`` and ``imagenet`` (``--dummy``), and chapter 5 of
rasbt/LLMs-from-scratch (``gpt_train.py``, ``gpt_generate.py`` over ``previous_chapters.py``),
from copies in ``tests/compat/programs/`` whose first line names the repository, path and
commit.

Downloads are replaced by files the tests write (BSDS300 images, a style image, a Cora-shaped
graph, a short "the-verdict.txt"), torchvision by the stand-in in ``torchvision_standin/``
(synthetic MNIST and FakeData, PIL transforms, ResNet-18 and VGG-16 with seeded "pretrained"
weights) and torchtext (with spaCy) by ``torchtext_standin/`` (synthetic Multi30k pairs), and
tiktoken by build-nanogpt's byte-level stand-in. Each program runs under
``python -m ember.compat.run`` and, where PyTorch is installed, under ``python``, and what
they print and save is compared.

siamese_network's float32 losses part ways with PyTorch's after the first Adadelta step (see
its ``train_float64.py``), and imagenet's after a step with batch norm over two images (as the
CIFAR models of session 16): there the first loss is compared closely, the rest loosely, and
a float64 run or the same checkpoint read by both frameworks carries the exact comparison.
"""

import ast
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH
from tests.test_programs_session15 import (
    PROGRAMS, _NUMBER, assert_same_text_and_close_numbers, command, run, workdir,
)

STANDIN = str(PROGRAMS / "torchvision_standin")


def needs(*modules):
    """Skip unless ``modules`` import (the programs' own imports that the ``test`` extra does
    not bring: PIL, six, matplotlib, requests)."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(bool(missing), reason=f"the program needs {', '.join(missing)}")


def _textured(rng, height, width, phase):
    """A smooth RGB pattern with noise, as a PIL image (a photograph's stand-in)."""
    from PIL import Image

    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([np.sin(x / (3 + phase) + c) + np.cos(y / (2 + c + phase))
                     for c in range(3)], -1)
    pixels = (base + 2) / 4 * 200 + rng.integers(0, 55, base.shape)
    return Image.fromarray(pixels.clip(0, 255).astype(np.uint8))


def _image_array(path):
    from PIL import Image

    return np.asarray(Image.open(path)).astype(np.int64)


def _examples(tmp_path, program, fw):
    return workdir(tmp_path, f"pytorch_examples/{program}", fw)


# -- what the programs found in ember ----------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_normal_blocks_on_avx512_are_the_avx2_build(monkeypatch, dtype):
    # PyTorch registers no AVX-512 normal kernel (its AVX-512 build dispatches normal_ to the
    # AVX2 one): on an AVX-512 machine ember must draw the AVX2 build's float32 blocks, not
    # the portable loop's (siamese_network's kaiming_normal_ weights were 1 ulp off there)
    from ember._core import rng_math

    draws = {}
    for cap in ("avx2", "avx512"):
        monkeypatch.setattr(rng_math, "cpu_capability", lambda cap=cap: cap)
        ember.manual_seed(3)
        draws[cap] = ember.empty(64, 9, dtype=getattr(ember, dtype)).normal_(0.5, 2.0)
    np.testing.assert_array_equal(draws["avx512"].numpy(), draws["avx2"].numpy())
    if HAS_TORCH:
        import torch

        torch.manual_seed(3)
        theirs = torch.empty(64, 9, dtype=getattr(torch, dtype)).normal_(0.5, 2.0)
        if torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512"):
            np.testing.assert_array_equal(draws["avx512"].numpy(), theirs.numpy())


# -- pytorch/examples: super_resolution ---------------------------------------------------------

SUPER_RES_ARGS = ["--upscale_factor", "3", "--batchSize", "2", "--testBatchSize", "2",
                  "--nEpochs", "1", "--threads", "0"]


def super_resolution_run(tmp_path, fw):
    """main.py on four training and one test image in BSDS300's folders (data.py downloads
    only when ``dataset/BSDS300/images`` is missing)."""
    root = _examples(tmp_path, "super_resolution", fw)
    rng = np.random.default_rng(0)
    for split, count in (("train", 4), ("test", 1)):
        folder = root / "dataset" / "BSDS300" / "images" / split
        folder.mkdir(parents=True)
        for i in range(count):
            _textured(rng, 264, 270, i + 4).save(folder / f"{i}.png")
    return run(command(fw, "main.py", *SUPER_RES_ARGS), cwd=root, PYTHONPATH=STANDIN), root


@needs("PIL", "six")
def test_super_resolution(tmp_path):
    out, root = super_resolution_run(tmp_path, "ember")
    losses = [float(x) for x in re.findall(r"\): Loss: (\d+\.\d{4})", out)]
    assert len(losses) == 2 and all(np.isfinite(losses))
    assert re.search(r"Avg\. PSNR: \d+\.\d{4} dB", out)
    assert (root / "model_epoch_1.pth").exists()
    # super_resolve.py loads the whole pickled model under safe_globals
    image = root / "dataset" / "BSDS300" / "images" / "test" / "0.png"
    resolve = ["super_resolve.py", "--input_image", str(image), "--model", "model_epoch_1.pth"]
    run(command("ember", *resolve, "--output_filename", "ember.png"), cwd=root,
        PYTHONPATH=STANDIN)
    mine = _image_array(root / "ember.png")
    assert mine.shape == (264 * 3, 270 * 3, 3)
    if HAS_TORCH:
        theirs, _ = super_resolution_run(tmp_path, "torch")
        assert_same_text_and_close_numbers(out, theirs)
        # PyTorch reads ember's checkpoint (a pickled nn.Module) and draws the same image
        run(command("torch", *resolve, "--output_filename", "torch.png"), cwd=root,
            PYTHONPATH=STANDIN)
        assert np.abs(mine - _image_array(root / "torch.png")).max() <= 1


# -- pytorch/examples: fast_neural_style ---------------------------------------------------------

_CTIME = re.compile(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\t", re.M)


def fast_neural_style_run(tmp_path, fw):
    """``neural_style.py train`` on four images (ImageFolder's layout) and a style image, then
    ``eval`` with the model it saved; stdout without the time stamps, and the folder."""
    root = _examples(tmp_path, "fast_neural_style", fw)
    rng = np.random.default_rng(0)
    (root / "data" / "train").mkdir(parents=True)
    for i in range(4):
        _textured(rng, 40 + i, 36, i).save(root / "data" / "train" / f"{i}.png")
    (root / "images").mkdir()
    _textured(rng, 32, 32, 7).save(root / "images" / "style.png")
    _textured(rng, 24, 20, 5).save(root / "images" / "content.png")
    script = os.path.join("neural_style", "neural_style.py")
    out = run(command(fw, script, "train", "--dataset", "data", "--style-image",
                      "images/style.png", "--save-model-dir", "saved",
                      "--checkpoint-model-dir", "ckpt", "--epochs", "1", "--batch-size", "2",
                      "--image-size", "32", "--log-interval", "1", "--checkpoint-interval",
                      "1"), cwd=root, PYTHONPATH=STANDIN)
    (model,) = (root / "saved").iterdir()
    run(command(fw, script, "eval", "--content-image", "images/content.png", "--model",
                str(model), "--output-image", "out.png"), cwd=root, PYTHONPATH=STANDIN)
    # the saved model's name has a time stamp too
    out = re.sub(r"\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d", "#", _CTIME.sub("", out))
    return out, root


@needs("PIL")
def test_fast_neural_style(tmp_path):
    out, root = fast_neural_style_run(tmp_path, "ember")
    lines = re.findall(r"Epoch 1:\t\[(\d)/4\]\tcontent: (\S+)\tstyle: (\S+)\ttotal: (\S+)", out)
    assert [line[0] for line in lines] == ["2", "4"]
    assert sorted(p.name for p in (root / "ckpt").iterdir()) == [
        "ckpt_epoch_0_batch_id_1.pth", "ckpt_epoch_0_batch_id_2.pth"]
    assert _image_array(root / "out.png").shape == (24, 20, 3)
    if HAS_TORCH:
        theirs, theirs_root = fast_neural_style_run(tmp_path, "torch")
        # float32 throughout: VGG features of 255-scaled images, Gram matrices, Adam (the
        # second batch's losses follow Adam's first step, whose signs on rounding-noise
        # gradients may differ: below)
        assert_same_text_and_close_numbers(out, theirs, rtol=1e-5)
        for name in ("ckpt_epoch_0_batch_id_1.pth", "ckpt_epoch_0_batch_id_2.pth"):
            mine = ember.load(root / "ckpt" / name)
            other = ember.load(theirs_root / "ckpt" / name)
            assert mine.keys() == other.keys()
            # Adam's first steps move each parameter by about lr (1e-3) * sign(gradient):
            # where a gradient is rounding noise (a bias whose per-channel constant a later
            # instance norm removes, a few weights) the frameworks may step opposite ways
            steps = int(name[-5])
            for key in mine:
                a, b = mine[key].numpy(), other[key].numpy()
                assert np.abs(a - b).max() <= 2e-3 * steps + 1e-5, f"{name} {key}"
                if a.ndim > 1 and steps == 1:  # (the second step compounds the first's)
                    apart = np.abs(a - b) > 1e-5 + 1e-4 * np.abs(b)
                    assert apart.mean() < 1e-3, f"{name} {key}: {apart.sum()} of {apart.size}"
        mine_image = _image_array(root / "out.png")
        assert np.abs(mine_image - _image_array(theirs_root / "out.png")).max() <= 1


# -- pytorch/examples: siamese_network ----------------------------------------------------------

# --dry-run: one training step per epoch, then the test set (128 pairs)
SIAMESE_ARGS = ["--epochs", "2", "--batch-size", "16", "--test-batch-size", "64",
                "--log-interval", "4", "--save-model", "--dry-run"]
_SIAMESE_TRAIN = re.compile(r"Train Epoch: (\d) \[(\d+)/256 \((\d+)%\)\]\tLoss: (\d+\.\d{6})")
_SIAMESE_TEST = re.compile(r"Test set: Average loss: (\d+\.\d{4}), Accuracy: (\d+)/128")


def test_siamese_network(tmp_path):
    # random.randint picks the pairs: seeded_run.py seeds Python's random as well
    root = _examples(tmp_path, "siamese_network", "ember")
    out = run(command("ember", "seeded_run.py", "main.py", *SIAMESE_ARGS), cwd=root,
              PYTHONPATH=STANDIN)
    train = _SIAMESE_TRAIN.findall(out)
    assert [(e, n) for e, n, _, _ in train] == [("1", "0"), ("2", "0")]
    assert len(_SIAMESE_TEST.findall(out)) == 2
    assert (root / "siamese_network.pt").exists()
    if HAS_TORCH:
        theirs_root = _examples(tmp_path, "siamese_network", "torch")
        theirs = run(command("torch", "seeded_run.py", "main.py", *SIAMESE_ARGS),
                     cwd=theirs_root, PYTHONPATH=STANDIN)
        assert len(_SIAMESE_TEST.findall(theirs)) == 2
        assert [t[:3] for t in train] == [t[:3] for t in _SIAMESE_TRAIN.findall(theirs)]
        # the first loss, before any step: ResNet-18 with batch norm on the same pairs (to
        # a few units of its last printed digit: OpenBLAS's Haswell kernels round by the
        # row count)
        assert float(train[0][3]) == pytest.approx(float(_SIAMESE_TRAIN.findall(theirs)[0][3]),
                                                   abs=1e-5)


def _steps(out):
    return np.array([[float(a), float(b)]
                     for a, b in re.findall(r"step \d+ loss (\S+) sum (\S+)", out)])


def test_siamese_network_float64_steps(tmp_path):
    root = _examples(tmp_path, "siamese_network", "ember")
    mine = _steps(run(command("ember", "train_float64.py", "3"), cwd=root,
                      PYTHONPATH=STANDIN))
    assert mine.shape == (3, 2) and np.isfinite(mine).all()
    if HAS_TORCH:
        theirs = _steps(run(command("torch", "train_float64.py", "3"), cwd=root,
                            PYTHONPATH=STANDIN))
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


# -- pytorch/examples: gat ----------------------------------------------------------------------

_CORA_CLASSES = ["Case_Based", "Genetic_Algorithms", "Neural_Networks",
                 "Probabilistic_Methods", "Reinforcement_Learning", "Rule_Learning", "Theory"]


def gat_run(tmp_path, fw):
    """main.py on a Cora-shaped graph (1700 papers, 24 binary features, 5000 citations: the
    program's split takes 1200 test and 400 validation nodes); stdout without timings."""
    root = _examples(tmp_path, "gat", fw)
    rng = np.random.default_rng(0)
    (root / "cora").mkdir()
    ids = rng.choice(10**6, 1700, replace=False)
    (root / "cora" / "cora.content").write_text("".join(
        "\t".join([str(paper), *map(str, (rng.random(24) < 0.15).astype(int)),
                   _CORA_CLASSES[rng.integers(7)]]) + "\n" for paper in ids))
    (root / "cora" / "cora.cites").write_text("".join(
        f"{ids[a]}\t{ids[b]}\n" for a, b in rng.integers(1700, size=(5000, 2))))
    out = run(command(fw, "main.py", "--epochs", "2", "--hidden-dim", "8", "--num-heads", "2",
                      "--val-every", "1"), cwd=root)
    return re.sub(r"\(\d+\.\d+s\)", "(#s)", out)


@needs("requests")
def test_gat(tmp_path):
    out = gat_run(tmp_path, "ember")
    assert "Dataset already downloaded..." in out
    assert len(re.findall(r"Epoch: 000\d \(#s\) loss_train: \d\.\d{4}", out)) == 2
    assert re.search(r"Test set results: loss \d\.\d{4} accuracy 0\.\d{4}", out)
    if HAS_TORCH:
        # dropout masks, softmax over masked scores and Adam with weight decay agree to the
        # printed digits
        assert out == gat_run(tmp_path, "torch")


# -- pytorch/examples: language_translation ----------------------------------------------------

TORCHTEXT = str(PROGRAMS / "torchtext_standin")
TRANSLATOR = ["--attn_heads", "2", "--enc_layers", "1", "--dec_layers", "1", "--embed_size",
              "16", "--dim_feedforward", "32"]
_EPOCH_TIME = re.compile(r"(Epoch time|ETA) = \d+\.\d seconds")


def translation_run(tmp_path, fw):
    """Two epochs of main.py (nn.Transformer, dropout, Adam) on the stand-in's Multi30k, then
    ``--inference`` on two sentences from stdin (the program reads until end of input, where
    ``input()`` raises EOFError, under PyTorch as under ember); the log and translations."""
    root = _examples(tmp_path, "language_translation", fw)
    run(command(fw, "seeded_run.py", "main.py", "--epochs", "2", "--batch", "16",
                "--logging_dir", "out/", *TRANSLATOR), cwd=root, PYTHONPATH=TORCHTEXT)
    log = _EPOCH_TIME.sub(r"\1 = #", (root / "out" / "log.txt").read_text())
    done = subprocess.run(
        command(fw, "main.py", "--inference", "--model_path", "out/last.pt", *TRANSLATOR),
        cwd=root, input="Ein mann läuft.\nEin hund spielt auf der straße.\n",
        capture_output=True, text=True, timeout=240,
        env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=TORCHTEXT))
    assert done.returncode == 1 and done.stderr.rstrip().endswith(
        "EOFError: EOF when reading a line"), done.stderr[-2000:]
    return log, done.stdout


def test_language_translation(tmp_path):
    log, translations = translation_run(tmp_path, "ember")
    assert "INFO:root:de vocab size: 44" in log and "INFO:root:en vocab size: 44" in log
    assert len(re.findall(r"Train loss: \d\.\d{3}\n\tVal loss: \d\.\d{3}", log)) == 2
    # a prompt and a translation per sentence, then the prompt that met the end of input
    assert re.fullmatch(r"(> .*\n){2}> ", translations)
    if HAS_TORCH:
        theirs_log, theirs_translations = translation_run(tmp_path, "torch")
        assert_same_text_and_close_numbers(log, theirs_log, rtol=1e-3)
        # greedy decoding, token by token, from the same weights up to float32 rounding
        assert translations == theirs_translations


# -- pytorch/examples: imagenet --dummy ---------------------------------------------------------

IMAGENET_ARGS = ["--dummy", "-a", "resnet18", "-b", "2", "-j", "0", "--epochs", "1", "-p",
                 "1", "--seed", "1", "--lr", "0.01"]
_METER = re.compile(r"Loss (\d\.\d{4}e[-+]\d\d) \([^)]*\)\tAcc@1 +(\d+\.\d\d) \([^)]*\)"
                    r"\tAcc@5 +(\d+\.\d\d)")


def imagenet_run(root, fw, *args):
    # FakeData's 1.28 million images capped at 4: two training and two validation steps
    out = run(command(fw, "main.py", *args), cwd=root, PYTHONPATH=STANDIN,
              TORCHVISION_STANDIN_FAKEDATA_SIZE="4")
    return [(float(loss), float(a1), float(a5)) for loss, a1, a5 in _METER.findall(out)], out


@pytest.fixture(scope="module")
def imagenet_ember(tmp_path_factory):
    """ember's run of main.py: its folder (with the checkpoint), meters and stdout."""
    root = _examples(tmp_path_factory.mktemp("imagenet"), "imagenet", "ember")
    mine, out = imagenet_run(root, "ember", *IMAGENET_ARGS)
    return root, mine, out


def test_imagenet_dummy(tmp_path, imagenet_ember):
    root, mine, out = imagenet_ember
    assert "=> creating model 'resnet18'" in out and "=> Dummy data is used!" in out
    assert len(mine) == 4 and re.search(r" \* {3}Acc@1 \d+\.\d{3} Acc@5 \d+\.\d{3}", out)
    assert (root / "checkpoint.pth.tar").exists() and (root / "model_best.pth.tar").exists()
    if HAS_TORCH:
        theirs_root = _examples(tmp_path, "imagenet", "torch")
        theirs, _ = imagenet_run(theirs_root, "torch", *IMAGENET_ARGS)
        # the first loss is before any step; batch norm over two images amplifies float32
        # rounding in the steps after it
        assert mine[0][0] == theirs[0][0]
        np.testing.assert_allclose(np.array(mine), np.array(theirs), rtol=2e-3)


#: -e with --resume: the checkpoint (model, SGD and StepLR states) read back, then validation
IMAGENET_RESUME = ["--resume", "checkpoint.pth.tar", "-e"]


def test_imagenet_resume_evaluate(imagenet_ember):
    root, mine, _ = imagenet_ember
    evaluated, out = imagenet_run(root, "ember", *IMAGENET_ARGS, *IMAGENET_RESUME)
    assert "=> loaded checkpoint 'checkpoint.pth.tar' (epoch 1)" in out
    assert evaluated == mine[2:]  # the validation that ran before the checkpoint was saved


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_imagenet_torch_resumes_ember_checkpoint(imagenet_ember):
    root, mine, _ = imagenet_ember
    resumed, out = imagenet_run(root, "torch", *IMAGENET_ARGS, *IMAGENET_RESUME)
    assert "=> loaded checkpoint 'checkpoint.pth.tar' (epoch 1)" in out
    np.testing.assert_allclose(np.array(resumed), np.array(mine[2:]), rtol=2e-4)


# -- rasbt/LLMs-from-scratch: chapter 5 ---------------------------------------------------------

LLM_CH05 = "llms_from_scratch/ch05"


def llm_run(tmp_path, fw, dtype):
    """train_tiny.py in a copy of chapter 5's folder beside a short "the-verdict.txt"."""
    root = workdir(tmp_path, LLM_CH05, f"{fw}-{dtype}")
    rng = random.Random(0)
    words = ("I had always thought Jack Gisburn rather a cheap genius though a good fellow "
             "enough so it was no great surprise to me to hear that in the height of his "
             "glory he had dropped his painting").split()
    (root / "the-verdict.txt").write_text(" ".join(rng.choice(words) for _ in range(120)))
    paths = [str(root / "standins"), str(PROGRAMS / "build_nanogpt" / "standins")]
    out = run(command(fw, "train_tiny.py", dtype), cwd=root,
              PYTHONPATH=os.pathsep.join(paths))
    report = {}
    for line in out.splitlines():
        key, _, rest = line.partition(" ")
        if key in ("train", "val", "tokens", "reloaded"):
            report[key] = np.array(ast.literal_eval(rest), dtype=float)
        elif key == "generate":
            report.setdefault("generate", []).append(rest)
        elif key == "Ep":
            report.setdefault("progress", []).append(_NUMBER.sub("#", line))
    return report


@needs("matplotlib", "requests", "tqdm")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_llms_from_scratch_ch05(tmp_path, dtype):
    mine = llm_run(tmp_path, "ember", dtype)
    assert mine["train"].shape == mine["val"].shape == (5,)
    assert mine["tokens"].tolist() == [24 + 120 * i for i in range(5)]
    assert mine["train"][0] == pytest.approx(np.log(50257), abs=0.5)  # untrained
    assert len(mine["generate"]) == 2
    if HAS_TORCH:
        theirs = llm_run(tmp_path, "torch", dtype)
        rtol = 1e-12 if dtype == "float64" else 1e-6
        for key in ("train", "val", "reloaded"):
            np.testing.assert_allclose(mine[key], theirs[key], rtol=rtol, err_msg=key)
        assert mine["progress"] == theirs["progress"]
        # top-k sampling (multinomial under manual_seed(123)) and greedy decoding
        assert mine["generate"] == theirs["generate"]


def test_programs_have_sources():
    for folder in ("pytorch_examples/super_resolution", "pytorch_examples/fast_neural_style",
                   "pytorch_examples/siamese_network", "pytorch_examples/gat",
                   "pytorch_examples/imagenet", "pytorch_examples/language_translation",
                   LLM_CH05):
        readme = (PROGRAMS / folder / "README.md").read_text()
        assert "commit" in readme and "github.com" in readme, folder


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
