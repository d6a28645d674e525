"""``functorch``'s pre-``torch.func`` API (``make_functional``, ``combine_state_for_ensemble``,
``functorch.experimental``) under the compat hook, and ``ember.functorch`` directly."""

import pathlib
import subprocess
import sys
import warnings

import pytest

import ember
from ember import functorch

HERE = pathlib.Path(__file__).parent


def test_program_prints_what_pytorch_prints():
    r = subprocess.run([sys.executable, "-m", "ember.compat.run",
                        str(HERE / "functorch_legacy_program.py")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines() == (
        HERE / "functorch_legacy_program.expected").read_text().splitlines()


def test_make_functional_warns_future_warning_naming_the_replacement():
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        functorch.make_functional(ember.nn.Linear(2, 2))


def test_make_functional_refuses_buffers():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="has buffers"):
            functorch.make_functional(ember.nn.BatchNorm1d(2))


@pytest.mark.parametrize("models, match", [
    ([], "at least one model"),
    ([ember.nn.Linear(2, 2), ember.nn.Linear(2, 2).eval()], "same training/eval mode"),
    ([ember.nn.Linear(2, 2), ember.nn.Conv1d(2, 2, 1)], "same class"),
])
def test_combine_state_for_ensemble_refusals(models, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=match):
            functorch.combine_state_for_ensemble(models)


def test_functional_module_gradient_matches_module_gradient():
    m = ember.nn.Linear(3, 2)
    x = ember.randn(5, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f, params = functorch.make_functional(m)
        g = functorch.grad(lambda p: f(p, x).square().sum())(params)
    m(x).square().sum().backward()
    assert ember.allclose(g[0], m.weight.grad) and ember.allclose(g[1], m.bias.grad)


def test_chunk_vmap_equals_vmap():
    x = ember.randn(7, 3)
    out = functorch.experimental.chunk_vmap(lambda t: t.sin() * 2, chunks=3)(x)
    assert ember.allclose(out, x.sin() * 2)
