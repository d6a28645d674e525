"""What public programs run unchanged met on their way (issue 17, session 14): the
deprecated ``Variable`` as PyTorch has it since 0.4 (a detached leaf, and a class every
tensor is an instance of: MorvanZhou's tutorials, old ``repackage_hidden`` helpers), powers
PyTorch spells as products (NOTE [ Powers by products ]: pytorch/examples' regression
features ``x ** i``), a linear layer's node keeping its input and weight only for the
gradients that read them (a weight stepped in place before ``backward`` breaks only a
backward that needs it) with PyTorch's message when it does, ``dot``'s errors, and the
weights-only refusal naming ``torch.serialization`` under the alias. Each check runs the
same code with ``T = ember`` and ``T = torch`` where torch is installed; the rest run
without it."""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _frameworks():
    import torch

    return ember, torch


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the type and text are what is compared)
        return type(e).__name__, str(e)
    return None


# -- Variable -------------------------------------------------------------------------------


def _variable_facts(T):
    from_autograd = T.autograd.Variable
    t = T.tensor([[1.0, 2.0], [3.0, 4.0]])
    v = from_autograd(t, requires_grad=True)
    out = [v is t, v.requires_grad, t.requires_grad, v.is_leaf, v.grad_fn is None,
           type(v).__name__, v.data_ptr() == t.data_ptr()]
    t_out, v_out = T.mean(t * t), T.mean(v * v)
    out += [t_out.grad_fn is None, type(v_out.grad_fn).__name__]
    v_out.backward()
    out += [v.grad.tolist(), t.grad is None]
    t.add_(1)  # the leaf shares the caller's memory
    out.append(v.tolist())
    # a tensor that requires grad or has history: the result is a detached leaf
    w = T.ones(2, requires_grad=True)
    h = w * 2
    out += [from_autograd(w).requires_grad, from_autograd(h).grad_fn is None,
            from_autograd(h, requires_grad=True).is_leaf]
    p = T.nn.Parameter(T.ones(2))
    out += [type(from_autograd(p)).__name__, repr(from_autograd())]
    # isinstance holds for every tensor (and only tensors)
    out += [isinstance(t, from_autograd), isinstance(p, from_autograd),
            isinstance(3, from_autograd), isinstance(np.ones(1), from_autograd)]
    out.append(_error(lambda: from_autograd([1, 2])))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out.append(_error(lambda: from_autograd(T.ones(1), requires_grad=True, volatile=True)))
    out.append(len(seen))
    out.append(_error(lambda: from_autograd(T.ones(2, dtype=T.long), requires_grad=True)))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = from_autograd(T.ones(1), volatile=True)
    out += [r.requires_grad, [(w.category.__name__, str(w.message)) for w in seen]]
    return out


def test_variable_is_a_detached_leaf():
    got = _variable_facts(ember)
    assert got[:3] == [False, True, False]  # a new tensor; the caller's keeps its flag
    assert got[7] is True and got[8] == "MeanBackward0"
    assert got[-10:-6] == [True, True, False, False]


@needs_torch
def test_variable_as_torch():
    mine, theirs = (_variable_facts(T) for T in _frameworks())
    theirs[5] = mine[5] = None  # (the class's printed name: ember.Tensor / Tensor)
    assert mine == theirs


def test_tensors_pass_old_isinstance_variable_checks():
    from ember.autograd import Variable

    def repackage_hidden(h):  # the pre-0.4 helper of word-language-model scripts
        return Variable(h.data) if isinstance(h, Variable) else tuple(map(repackage_hidden, h))

    h = (ember.ones(2, requires_grad=True) * 2, ember.zeros(2))
    out = repackage_hidden(h)
    assert all(o.grad_fn is None and not o.requires_grad for o in out)


# -- powers as products (NOTE [ Powers by products ]) ---------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("exponent", [3, 3.0, -2, -0.5])
def test_powers_by_products(dtype, exponent):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(4099) * 3).astype(dtype)
    x[:3] = [0.0, -0.0, np.inf]
    with np.errstate(all="ignore"):
        want = {3: x * x * x, -2: 1 / (x * x), -0.5: 1 / np.sqrt(x)}[exponent]
    t = ember.tensor(x)
    for got in (t ** exponent, ember.pow(t, exponent), t.clone().pow_(exponent),
                t[::2] ** exponent):
        ref = want if got.shape[0] == x.shape[0] else want[::2]
        np.testing.assert_array_equal(got.numpy(), ref)
        assert got.dtype == t.dtype


def test_power_by_products_keeps_its_gradient():
    x = ember.tensor([0.5, 1.5, -2.0], requires_grad=True)
    y = x ** 3
    assert type(y.grad_fn).__name__ == "PowBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.array([0.5, 1.5, -2.0]) ** 2, rtol=1e-6)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("exponent", [2, 3, -1, -2, -0.5, 3.0])
def test_powers_match_torch_bits(dtype, exponent):
    import torch

    g = torch.Generator().manual_seed(3)
    x = torch.rand(10007, generator=g, dtype=getattr(torch, dtype)) * 8 + 1e-3
    t = ember.tensor(x.numpy())
    np.testing.assert_array_equal((t ** exponent).numpy(), (x ** exponent).numpy())
    np.testing.assert_array_equal(ember.pow(t[1::3], exponent).numpy(),
                                  torch.pow(x[1::3], exponent).numpy())


@needs_torch
def test_regression_features_match_torch():
    """pytorch/examples regression's ``torch.cat([x ** i for i in range(1, 5)], 1)`` inputs."""
    import torch

    def feats(T):
        T.manual_seed(0)
        x = T.randn(32).unsqueeze(1)
        return T.cat([x ** i for i in range(1, 4)], 1).numpy()

    np.testing.assert_array_equal(feats(ember), feats(torch))


# -- a linear node keeps what its gradients read ---------------------------------------------


def _stepped_weight(T, x_grad, w_grad=True, shape=(4, 6)):
    """Forward through a Linear, change its weight in place, then backward."""
    T.manual_seed(0)
    m = T.nn.Linear(6, 3)
    m.weight.requires_grad_(w_grad)
    x = T.randn(*shape, requires_grad=x_grad)
    y = m(x).sum()
    with T.no_grad():
        m.weight.add_(1)
    err = _error(y.backward)
    if err is not None:
        return err[0], err[1].replace("ember.autograd", "torch.autograd")
    return [None if p.grad is None else p.grad.tolist() for p in (m.weight, m.bias)]


def test_weight_stepped_before_backward_on_data_input():
    grads = _stepped_weight(ember, x_grad=False)
    assert isinstance(grads, list) and grads[1] == [4.0, 4.0, 4.0]


def test_weight_stepped_before_backward_that_needs_it():
    kind, text = _stepped_weight(ember, x_grad=True)
    assert kind == "RuntimeError"
    assert "[torch.FloatTensor [6, 3]], which is output 0 of AsStrided, is at version 2" in text
    kind, text = _stepped_weight(ember, x_grad=True, w_grad=False)
    assert "[torch.FloatTensor [6, 3]] is at version 2; expected version 1" in text


@needs_torch
@pytest.mark.parametrize("x_grad, w_grad, shape", [
    (False, True, (4, 6)), (True, True, (4, 6)), (True, True, (2, 4, 6)), (True, True, (6,)),
    (True, False, (4, 6)), (False, True, (6,))])
def test_weight_stepped_as_torch(x_grad, w_grad, shape):
    mine, theirs = (_stepped_weight(T, x_grad, w_grad, shape) for T in _frameworks())
    if isinstance(theirs, list):
        np.testing.assert_allclose(np.array(mine[0]), np.array(theirs[0]), rtol=1e-6)
        assert mine[1] == theirs[1]
    else:
        assert mine == theirs


# -- dot's errors -----------------------------------------------------------------------------

_DOT_CASES = [((2, 2), (2, 2), "float32", "float32"), ((2,), (2, 2), "float32", "float32"),
              ((2,), (2,), "float32", "float64")]
_DOT_TEXT = ["1D tensors expected, but got 2D and 2D tensors",
             "1D tensors expected, but got 1D and 2D tensors",
             "dot : expected both vectors to have same dtype, but found Float and Double"]


@pytest.mark.parametrize("fn", ["dot", "vdot"])
@pytest.mark.parametrize("case, text", list(zip(_DOT_CASES, _DOT_TEXT)))
def test_dot_errors_read_as_torch(fn, case, text):
    a = ember.ones(*case[0], dtype=getattr(ember, case[2]))
    b = ember.ones(*case[1], dtype=getattr(ember, case[3]))
    assert _error(lambda: getattr(ember, fn)(a, b)) == ("RuntimeError", text)


@needs_torch
@pytest.mark.parametrize("fn", ["dot", "vdot"])
@pytest.mark.parametrize("case", _DOT_CASES)
def test_dot_errors_as_torch(fn, case):
    def err(T):
        a = T.ones(*case[0], dtype=getattr(T, case[2]))
        b = T.ones(*case[1], dtype=getattr(T, case[3]))
        return _error(lambda: getattr(T, fn)(a, b))

    mine, theirs = (err(T) for T in _frameworks())
    assert mine == theirs


# -- the weights-only refusal under the alias -------------------------------------------------


def test_refused_global_names_torch_serialization_under_the_alias(tmp_path):
    code = """
        import torch
        net = torch.nn.Sequential(torch.nn.Linear(1, 2))
        torch.save(net, "net.pkl")
        try:
            torch.load("net.pkl")
        except Exception as e:
            print(type(e).__name__)
            print("torch.serialization.add_safe_globals([torch.nn.modules.container.Sequential])"
                  in str(e), "ember." in str(e))
    """
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    run = subprocess.run([sys.executable, "-m", "ember.compat.run", str(script)],
                         capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["UnpicklingError", "True", "False"]


def test_refused_global_names_ember_serialization_without_the_alias(tmp_path):
    net = ember.nn.Sequential(ember.nn.Linear(1, 2))
    ember.save(net, tmp_path / "net.pkl")
    kind, text = _error(lambda: ember.load(tmp_path / "net.pkl"))
    assert kind == "UnpicklingError"
    assert "`ember.serialization.add_safe_globals([" in text


# -- an uncaught error's traceback starts at the script ---------------------------------------


def test_uncaught_error_traceback_starts_at_the_script(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import torch
        print("before")
        def step():
            torch.dot(torch.ones(2, 2), torch.ones(2, 2))
        step()
    """))
    run = subprocess.run([sys.executable, "-m", "ember.compat.run", str(script)],
                         capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert run.returncode == 1 and run.stdout == "before\n"
    lines = run.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1].startswith(f'  File "{script}", line 6, in <module>')
    assert "compat/run.py" not in run.stderr and "runpy" not in run.stderr
    assert lines[-1] == "RuntimeError: 1D tensors expected, but got 2D and 2D tensors"


def test_script_exit_status_passes_through(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import sys\nsys.exit(3)\n")
    run = subprocess.run([sys.executable, "-m", "ember.compat.run", str(script)],
                         capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert (run.returncode, run.stderr) == (3, "")
