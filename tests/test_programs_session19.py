"""Session 19's public programs: the PyTorch tutorials' NLP pages (``beginner_source/nlp``),
run unchanged under ember and under PyTorch from copies in
``tests/compat/programs/pytorch_tutorials_nlp/`` (each file's first line names its commit).

The pages use the old spellings throughout (``autograd.Variable``, ``torch.LongTensor(list)``,
``torch.Tensor(1, n).fill_``, ``.data``, implicit-dim ``log_softmax``), hand-written
log-sum-exp and Viterbi over scalar-indexed tensors, LSTMs (one- and two-directional) fed one
sentence at a time, and SGD with weight decay. Both frameworks print the same text; the
numbers agree to float32 rounding.
"""

import re

import numpy as np
import pytest

from tests.conftest import HAS_TORCH
from tests.test_programs_session15 import (
    _NUMBER, assert_same_text_and_close_numbers, command, run, workdir,
)

_NLP = "pytorch_tutorials_nlp"

#: (program, edits to its copy that keep the run short: (old text, new text))
_PROGRAMS = {
    "pytorch_tutorial": (),  # prints grad_fn objects (addresses masked)
    "deep_learning_tutorial": (),
    "word_embeddings_tutorial": (),
    # 300 epochs of toy data: the first 40 (the tagger already tags the sentence right)
    "sequence_models_tutorial": (("range(300)", "range(40)"),),
    # the Bi-LSTM CRF's 300 epochs (Python loops over tags): the first 15
    "advanced_tutorial": (("range(\n        300)", "range(\n        15)"),),
}


def _nlp_run(tmp_path, fw, program):
    root = workdir(tmp_path, _NLP, fw)
    path = root / f"{program}.py"
    text = path.read_text()
    for old, new in _PROGRAMS[program]:
        assert old in text
        text = text.replace(old, new)
    path.write_text(text)
    # PYTHONHASHSEED: the word-embedding page numbers its words in set order
    out = run(command(fw, path.name), cwd=root, PYTHONHASHSEED="0")
    return re.sub(r" object at 0x[0-9a-f]+>", " object at #>", out)


@pytest.mark.parametrize("program", sorted(_PROGRAMS))
def test_pytorch_tutorials_nlp(tmp_path, program):
    out = _nlp_run(tmp_path, "ember", program)
    assert "tensor(" in out
    if program == "pytorch_tutorial":
        assert "<AddBackward0 object at #>\ntensor(21., grad_fn=<SumBackward0>)" in out
    if program == "advanced_tutorial":  # (path score, tag list) before and after training
        assert len(re.findall(r"^\(tensor\(\S+, grad_fn=<SelectBackward0>\), \[", out, re.M)) == 2
    if HAS_TORCH:
        theirs = _nlp_run(tmp_path, "torch", program)
        assert_same_text_and_close_numbers(out, theirs, rtol=2e-5)



# -- pytorch/tutorials: examples_autograd and examples_nn (sin(x) by a cubic) ---------------------

_EXAMPLES = "pytorch_tutorials_examples"

#: program: (through seeded_run.py (unseeded draws), edits that keep the run short)
_EXAMPLE_PROGRAMS = {
    "polynomial_custom_function": (False, ()),  # an autograd.Function; full-size weights
    "polynomial_nn": (True, ()),  # Sequential(Linear, Flatten(0, 1)), in-place updates
    # random orders each step (Python's random), momentum SGD: 6000 of its 30000 steps
    "dynamic_net": (True, (("range(30000)", "range(6000)"),)),
}


def _example_run(tmp_path, fw, program):
    seeded, edits = _EXAMPLE_PROGRAMS[program]
    root = workdir(tmp_path, _EXAMPLES, fw)
    path = root / f"{program}.py"
    text = path.read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path.write_text(text)
    args = ["seeded_run.py", path.name] if seeded else [path.name]
    return run(command(fw, *args), cwd=root)


@pytest.mark.parametrize("program", sorted(_EXAMPLE_PROGRAMS))
def test_pytorch_tutorials_examples(tmp_path, program):
    out = _example_run(tmp_path, "ember", program)
    losses = [float(x) for x in re.findall(r"^\d+ (\S+)$", out, re.M)]
    assert len(losses) >= 3 and losses[-1] < losses[0]
    assert out.splitlines()[-1].startswith("Result: y = ")
    if HAS_TORCH:
        theirs = _example_run(tmp_path, "torch", program)
        # the fitted constant terms end near 0 (1e-10, rounding's size): an absolute floor
        assert _NUMBER.sub("#", out) == _NUMBER.sub("#", theirs)
        np.testing.assert_allclose([float(x) for x in _NUMBER.findall(out)],
                                   [float(x) for x in _NUMBER.findall(theirs)],
                                   rtol=2e-5, atol=1e-8)


# -- leftovers ----------------------------------------------------------------------------------

_SET_TYPE = """
import warnings
import {fw} as torch
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    torch.set_default_tensor_type(torch.DoubleTensor)
    torch.set_default_tensor_type("torch.FloatTensor")
    torch.set_default_tensor_type(torch.FloatTensor)
    torch.nn.Linear(2, 2).state_dict({{}}, "a.")
print([(w.category.__name__, w.filename == __file__, str(w.message)[:40]) for w in caught])
print(torch.get_default_dtype())
"""


def test_set_default_tensor_type_warns_once_and_state_dict_at_callers_line(tmp_path):
    # torch's deprecation warning for set_default_tensor_type is a warn-once (a second call,
    # even under an "always" filter, is silent); state_dict's positional-argument
    # FutureWarning names the caller's line in both frameworks. (torch's warn-once names
    # torch's own __init__.py, the frame that calls into C++; ember names the caller's
    # line, so only the category and text are compared.)
    outs = {}
    for fw in ("ember", "torch") if HAS_TORCH else ("ember",):
        script = tmp_path / f"{fw}_set_type.py"
        script.write_text(_SET_TYPE.format(fw=fw))
        outs[fw] = run(command(fw, script.name), cwd=tmp_path)
    lines = outs["ember"].splitlines()
    assert lines[0] == ("[('UserWarning', True, 'torch.set_default_tensor_type() is depre'), "
                        "('FutureWarning', True, 'Positional args are being deprecated, us')]")
    assert lines[1] == "torch.float32"
    if HAS_TORCH:
        theirs = outs["torch"].splitlines()
        assert theirs[1:] == lines[1:]
        assert re.sub(r", (True|False), ", ", ", theirs[0]) == re.sub(
            r", (True|False), ", ", ", lines[0])
