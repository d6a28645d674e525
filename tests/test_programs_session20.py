"""Session 20's public programs, run unchanged under ember and under PyTorch from copies in
``tests/compat/programs/`` (each names its source and commit):

- pytorch/examples ``mnist`` (Adadelta, StepLR, dropout, ``--save-model``) on the torchvision
  stand-in's synthetic MNIST, and ``vision_transformer`` (removed from pytorch/examples after
  commit cd29c12; patches by ``unfold``, MultiheadAttention, Adam with weight decay) on its
  synthetic CIFAR10, both through ``seeded_run.py``;
- the PyTorch tutorials' polynomial pages: ``polynomial_autograd`` (tensors and autograd by
  hand), ``polynomial_optim`` (Sequential and SGD) and ``polynomial_module`` (a Module of four
  Parameters);
- rasbt/LLMs-from-scratch chapter 6 (classification finetuning: a GPT's last block and a new
  head trained on spam/ham texts) and chapter 7 (instruction finetuning, then generation), in
  the chapters' own ``--test_mode`` (a one-layer GPT) on small synthetic data the tests write.

Both frameworks print the same text (timings and the torch version masked) and the numbers
agree to float32 rounding; saved weights agree as well.
"""

import json
import os
import random
import re

import numpy as np
import pytest

from tests.conftest import HAS_TORCH
from tests.test_programs_session15 import (
    _NUMBER, PROGRAMS, assert_same_text_and_close_numbers, command, run, state_arrays,
    workdir,
)
from tests.test_programs_session17 import needs

_STANDIN = str(PROGRAMS / "torchvision_standin")


def _path(*folders):
    """A PYTHONPATH of ``folders`` (stand-ins) before the caller's own."""
    return os.pathsep.join([*map(str, folders), *filter(None, [os.environ.get("PYTHONPATH")])])


def _frameworks():
    return ("ember", "torch") if HAS_TORCH else ("ember",)


def _assert_close_states(mine, theirs, rtol=1e-4, atol=1e-6):
    assert mine.keys() == theirs.keys()
    for k in mine:
        np.testing.assert_allclose(mine[k], theirs[k], rtol=rtol, atol=atol, err_msg=k)


# -- pytorch/examples: mnist and vision_transformer ------------------------------------------

_MNIST_ARGS = ["--epochs", "2", "--log-interval", "1", "--save-model"]


def test_pytorch_examples_mnist(tmp_path):
    outs, states = {}, {}
    for fw in _frameworks():
        root = workdir(tmp_path, "pytorch_examples/mnist", fw)
        outs[fw] = run(command(fw, "seeded_run.py", "main.py", *_MNIST_ARGS), cwd=root,
                       PYTHONPATH=_path(_STANDIN))
        states[fw] = state_arrays(root / "mnist_cnn.pt")
    out = outs["ember"]
    # 256 synthetic images in batches of 64, every batch logged, two epochs, two test passes
    assert len(re.findall(r"^Train Epoch: [12] \[\d+/256 \(\d+%\)\]\tLoss: \d+\.\d{6}$", out,
                          re.M)) == 8
    assert len(re.findall(r"^Test set: Average loss: \d+\.\d{4}, Accuracy: \d+/128 ", out,
                          re.M)) == 2
    assert sorted(states["ember"]) == ["conv1.bias", "conv1.weight", "conv2.bias",
                                       "conv2.weight", "fc1.bias", "fc1.weight", "fc2.bias",
                                       "fc2.weight"]
    if HAS_TORCH:
        assert_same_text_and_close_numbers(out, outs["torch"], rtol=1e-5)
        _assert_close_states(states["ember"], states["torch"])


_VIT_ARGS = ["--no-cuda", "--patch-size", "8", "--latent-size", "32", "--num-heads", "4",
             "--num-encoders", "2", "--img-size", "32", "--epochs", "2", "--batch-size", "4"]


@needs("PIL")  # the stand-in's Resize goes through a PIL image, as torchvision's does
def test_pytorch_examples_vision_transformer(tmp_path):
    outs, states = {}, {}
    for fw in _frameworks():
        root = workdir(tmp_path, "pytorch_examples/vision_transformer", fw)
        outs[fw] = run(command(fw, "seeded_run.py", "main.py", *_VIT_ARGS), cwd=root,
                       PYTHONPATH=_path(_STANDIN), TQDM_DISABLE="1")
        states[fw] = state_arrays(root / "best-weights.pt")
    out = outs["ember"]
    assert "Saved Best Weights" in out
    assert re.search(r"^Training Loss : \d+\.\d+\nValid Loss : \d+\.\d+$", out, re.M)
    # 4 * 4 patches of 8 * 8 * 3 values; the class token has the batch's size, as written
    assert states["ember"]["embedding.LinearProjection.weight"].shape == (32, 192)
    assert states["ember"]["embedding.class_token"].shape == (4, 1, 32)
    if HAS_TORCH:
        assert_same_text_and_close_numbers(out, outs["torch"], rtol=1e-5)
        # the key projection's bias has no effect on attention (softmax ignores a shift
        # shared by every key), so its gradient is rounding noise, which Adam scales up to
        # whole steps: only the query and value thirds of in_proj_bias are compared
        mine, theirs = states["ember"], states["torch"]
        for name in [k for k in mine if k.endswith("attention.in_proj_bias")]:
            mine[name] = mine[name].reshape(3, -1)[[0, 2]]
            theirs[name] = theirs[name].reshape(3, -1)[[0, 2]]
        _assert_close_states(mine, theirs)


# -- pytorch/tutorials: the polynomial pages ---------------------------------------------------

_POLYNOMIALS = ["polynomial_autograd", "polynomial_module", "polynomial_optim"]


@pytest.mark.parametrize("program", _POLYNOMIALS)
def test_pytorch_tutorials_polynomials(tmp_path, program):
    outs = {}
    for fw in _frameworks():
        root = workdir(tmp_path, "pytorch_tutorials_examples", fw)
        # the weights (randn, or Linear's initialisation) are drawn unseeded: seeded_run
        outs[fw] = run(command(fw, "seeded_run.py", f"{program}.py"), cwd=root)
    out = outs["ember"]
    losses = [float(x) for x in re.findall(r"^\d+ (\S+)$", out, re.M)]
    assert len(losses) == 20 and losses[-1] < losses[0]
    assert re.fullmatch(r"Result: y = \S+ \+ \S+ x \+ \S+ x\^2 \+ \S+ x\^3",
                        out.splitlines()[-1])
    if HAS_TORCH:
        theirs = outs["torch"]
        assert _NUMBER.sub("#", out) == _NUMBER.sub("#", theirs)
        # the fitted constant and square terms are small: an absolute floor
        np.testing.assert_allclose([float(x) for x in _NUMBER.findall(out)],
                                   [float(x) for x in _NUMBER.findall(theirs)],
                                   rtol=2e-5, atol=1e-7)


# -- rasbt/LLMs-from-scratch: chapters 6 and 7 ------------------------------------------------

_WORDS = ("free prize call now win cash meet lunch today home later thanks ok see you txt "
          "claim").split()
_LLM_STANDINS = [str(PROGRAMS / "llms_from_scratch" / "ch05" / "standins"),
                 str(PROGRAMS / "build_nanogpt" / "standins")]
_MINUTES = re.compile(r"Training completed in \S+ minutes\.")


def _sentence(rng, lo, hi):
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))


def _ch06_run(tmp_path, fw):
    """gpt_class_finetune.py --test_mode beside a 60-line SMSSpamCollection.tsv (one in three
    spam); every step evaluated (its ``eval_freq`` lowered from 50 to 1)."""
    root = workdir(tmp_path, "llms_from_scratch/ch06", fw)
    rng = random.Random(0)
    (root / "sms_spam_collection").mkdir()
    (root / "sms_spam_collection" / "SMSSpamCollection.tsv").write_text("".join(
        f"{'spam' if i % 3 == 0 else 'ham'}\t{_sentence(rng, 3, 12)}\n" for i in range(60)))
    path = root / "gpt_class_finetune.py"
    text = path.read_text()
    assert "eval_freq=50, eval_iter=5" in text
    path.write_text(text.replace("eval_freq=50, eval_iter=5", "eval_freq=1, eval_iter=5"))
    out = run(command(fw, "gpt_class_finetune.py", "--test_mode"), cwd=root,
              PYTHONPATH=_path(*_LLM_STANDINS))
    return _MINUTES.sub("Training completed in # minutes.", out), root


@needs("pandas", "matplotlib", "requests", "tqdm")
def test_llms_from_scratch_ch06_classification_finetune(tmp_path):
    out, root = _ch06_run(tmp_path, "ember")
    # 40 balanced texts: 28 to train (3 batches of 8), 4 to validate; five epochs
    assert len(re.findall(r"^Ep \d \(Step \d{6}\): Train loss \d\.\d{3}, Val loss \d\.\d{3}$",
                          out, re.M)) == 15
    assert len(re.findall(r"^Training accuracy: \d+\.\d\d% \| Validation accuracy: ", out,
                          re.M)) == 5
    assert (root / "loss-plot.pdf").exists() and (root / "accuracy-plot.pdf").exists()
    if HAS_TORCH:
        theirs, _ = _ch06_run(tmp_path, "torch")
        # three decimals printed: a rounding step apart at most
        assert_same_text_and_close_numbers(out, theirs, rtol=2e-3)


def _ch07_run(tmp_path, fw):
    """gpt_instruction_finetuning.py --test_mode beside a 40-entry instruction-data.json.

    The stand-in tokenizer spends a token per byte, so the collate function's length limit
    is lowered to the test model's context (120 tokens, from 1024), and the responses are
    12 tokens long (from 256)."""
    root = workdir(tmp_path, "llms_from_scratch/ch07", fw)
    rng = random.Random(0)
    entries = [{"instruction": "Rewrite: " + _sentence(rng, 4, 4),
                "input": _sentence(rng, 3, 3) if i % 2 else "",
                "output": _sentence(rng, 5, 5)} for i in range(40)]
    (root / "instruction-data.json").write_text(json.dumps(entries, indent=1))
    path = root / "gpt_instruction_finetuning.py"
    text = path.read_text()
    for old, new in (("allowed_max_length=1024)", "allowed_max_length=120)"),
                     ("max_new_tokens=256,", "max_new_tokens=12,")):
        assert old in text
        text = text.replace(old, new)
    path.write_text(text)
    out = run(command(fw, "gpt_instruction_finetuning.py", "--test_mode"), cwd=root,
              PYTHONPATH=_path(root / "standins", *_LLM_STANDINS),
              TQDM_DISABLE="1")
    out = _MINUTES.sub("Training completed in # minutes.", out)
    out = re.sub(r"^torch version: .*$", "torch version: #", out, flags=re.M)
    return out, root


@needs("matplotlib", "requests", "tqdm")
def test_llms_from_scratch_ch07_instruction_finetune(tmp_path):
    out, root = _ch07_run(tmp_path, "ember")
    assert "Training set length: 10\nValidation set length: 2\nTest set length: 4\n" in out
    assert "Loaded model: Small test model" in out
    assert re.search(r"^Ep 1 \(Step 000000\): Train loss \d+\.\d{3}, Val loss \d+\.\d{3}$",
                     out, re.M)
    responses = json.loads((root / "instruction-data-with-response-standalone.json")
                           .read_text())
    assert len(responses) == 4 and all("model_response" in r for r in responses)
    state = state_arrays(root / "Smalltestmodel-sft-standalone.pth")
    assert state["tok_emb.weight"].shape == (50257, 12)
    if HAS_TORCH:
        theirs, their_root = _ch07_run(tmp_path, "torch")
        assert_same_text_and_close_numbers(out, theirs, rtol=1e-5)
        # greedy decoding from the finetuned model: the same tokens
        assert responses == json.loads(
            (their_root / "instruction-data-with-response-standalone.json").read_text())
        theirs_state = state_arrays(their_root / "Smalltestmodel-sft-standalone.pth")
        _assert_close_states(state, theirs_state)
