"""Regressions found by running public PyTorch example programs unchanged under
``python -m ember.compat.run``: each test is a minimal program of our own that reproduces
one failure and checks the behaviour against torch where torch is installed."""

import io
import pickle

import pytest

import ember

try:
    import torch
    HAS_TORCH = True
except ImportError:  # pragma: no cover
    torch = None
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


# -- functions pickle by their public address (whole-model torch.save) ----------------------------

@pytest.mark.parametrize("f", [ember.nn.functional.relu, ember.nn.functional.gelu,
                               ember.add, ember.tanh, ember.special.expit, ember.linalg.inv,
                               ember.fft.fft, ember.nn.functional.conv2d])
def test_public_function_pickles_as_itself(f):
    assert pickle.loads(pickle.dumps(f)) is f


def test_public_function_module_names_its_namespace():
    assert ember.nn.functional.relu.__module__ == "ember.nn.functional"
    assert ember.add.__module__ == "ember"


def test_transformer_layer_saves_whole():
    layer = ember.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    buf = io.BytesIO()
    ember.save(layer, buf)
    buf.seek(0)
    back = ember.load(buf, weights_only=False)
    x = ember.randn(3, 2, 8)
    assert ember.equal(back(x), layer(x))


# -- NumPy array subclasses become plain tensors (nanoGPT's np.memmap batches) --------------------

@pytest.fixture
def memmap(tmp_path):
    import numpy as np

    path = tmp_path / "ids.bin"
    np.arange(12, dtype=np.uint16).tofile(path)
    return np.memmap(path, dtype=np.uint16, mode="r+")


@pytest.mark.parametrize("factory", ["from_numpy", "as_tensor", "asarray", "tensor"])
def test_memmap_slice_converts_to_working_tensor(memmap, factory):
    import numpy as np

    x = getattr(ember, factory)(memmap[2:6].astype(np.int64))
    y = ember.stack([x, x + 1])
    assert y.dtype == ember.int64 and y.tolist() == [[2, 3, 4, 5], [3, 4, 5, 6]]


def test_from_numpy_memmap_shares_memory(memmap):
    ember.from_numpy(memmap)[0] = 9
    assert memmap[0] == 9


@needs_torch
@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # NumPy's note on np.matrix
def test_from_numpy_matrix_matches_torch():
    import numpy as np

    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    e, t = ember.from_numpy(m).sum(0), torch.from_numpy(m).sum(0)
    assert e.tolist() == t.tolist() and tuple(e.shape) == tuple(t.shape)


# -- the runner imports a script's sibling modules from any working directory ---------------------

def test_runner_puts_script_folder_on_path(tmp_path):
    import subprocess
    import sys

    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "sibling_helper.py").write_text("VALUE = 41\n")
    (tmp_path / "prog" / "main.py").write_text(
        "import os, sibling_helper, torch\n"
        "print(sibling_helper.VALUE + 1, os.path.isabs(__file__), torch.ones(1).item())\n")
    r = subprocess.run([sys.executable, "-m", "ember.compat.run", "prog/main.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["42", "True", "1.0"]


# -- large element-wise ops on the thread pool stay quiet as on one thread (minGPT chargpt) -------

def test_threaded_log_of_negatives_warns_nothing():
    import warnings

    x = ember.full((1 << 19,), -1.0)
    threads = ember.get_num_threads()
    ember.set_num_threads(2)  # the pool splits the work only with two threads or more
    try:
        # the program's filters as they are (NOTE [ Floating-point warnings ]): nothing shown
        with warnings.catch_warnings(record=True) as shown:
            r = ember.log(x)
    finally:
        ember.set_num_threads(threads)
    assert bool(r.isnan().all())
    assert [str(w.message) for w in shown] == []


# -- class-index targets of the wrong shape raise torch's errors (char-rnn's 0-d targets) ---------

_TARGET_SHAPES = [((1, 5), []), ((3, 5), [2]), ((2, 5, 4), [2, 3]), ((2, 5, 4), [2, 4, 1]),
                  ((2, 5, 4, 3), [2, 4]), ((2, 5), [2, 1]), ((2, 5, 4), []), ((2, 5, 4), [3, 4]),
                  ((2, 5, 4, 3), [2, 4, 2]), ((2, 5, 4, 3, 2), [2, 4, 3]), ((5,), [2]),
                  ((5,), [1, 1]), ((2, 5), [3, 1]), ((5,), []), ((5,), [1]),
                  ((2, 5, 4, 3), [2, 4, 3])]


def _outcome(fn, shape, tshape, lib):
    try:
        r = fn(lib.zeros(shape), lib.zeros(tshape, dtype=lib.int64))
        return "ok", tuple(r.shape), round(float(r), 5)
    except (ValueError, RuntimeError) as e:
        return type(e).__name__, str(e)


@needs_torch
@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("shape,tshape", _TARGET_SHAPES)
def test_class_target_shape_errors_match_torch(name, shape, tshape):
    assert _outcome(getattr(ember.nn.functional, name), shape, tshape, ember) == \
        _outcome(getattr(torch.nn.functional, name), shape, tshape, torch)


# -- shapes that do not broadcast raise torch's message (vit-pytorch's MAE with a bad config) -----

def _broadcast_message(lib, f, *shapes):
    try:
        f(*[lib.zeros(s) for s in shapes])
    except RuntimeError as e:
        return str(e)
    return None


def _iadd(a, b):
    a += b


@needs_torch
@pytest.mark.parametrize("f,shapes", [
    (lambda a, b: a + b, [(2, 3, 4), (5, 6, 4)]),
    (lambda a, b: a * b, [(4,), (2, 3, 5)]),
    (lambda a, b: a - b, [(2, 1, 3), (4, 5)]),
    (lambda a, b, c: a.addcmul(b, c), [(2, 3), (2, 3), (5, 3)]),
    (_iadd, [(2, 3), (4, 3)]),
    (_iadd, [(2, 3), (1, 2, 3)]),
    (lambda a, b: a.mul_(b), [(2, 1), (2, 3)]),
])
def test_broadcast_error_message_matches_torch(f, shapes):
    assert _broadcast_message(ember, f, *shapes) == _broadcast_message(torch, f, *shapes)


# -- using CUDA on a machine without it raises torch's AssertionError (ddp tutorial's .to(0)) -----

@pytest.mark.parametrize("use", [lambda: ember.zeros(2).to("cuda"), lambda: ember.zeros(2).cuda(),
                                 lambda: ember.nn.Linear(2, 2).to("cuda"),
                                 lambda: ember.zeros(2, device="cuda:0")])
def test_cuda_use_without_cuda_raises_assertion_error(use):
    if ember.cuda._runtime.is_compiled():
        pytest.skip("CuPy is installed")
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        use()


# -- TransformerEncoder gives torch's nested-tensor warning (word_language_model's Transformer) ----

def _encoder_warnings(lib, **kw):
    import warnings

    args = dict(d_model=6, nhead=2)
    args.update(kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(**args), 2)
    return [str(w.message) for w in caught]


@needs_torch
@pytest.mark.parametrize("kw", [{}, {"batch_first": True}, {"batch_first": True, "nhead": 3},
                                {"batch_first": True, "norm_first": True},
                                {"batch_first": True, "bias": False},
                                {"batch_first": True, "activation": "gelu"}])
def test_transformer_encoder_nested_tensor_warning_matches_torch(kw):
    assert _encoder_warnings(ember, **kw) == _encoder_warnings(torch, **kw)


# -- layers are importable from torch's nn.modules paths (word_language_model's safe_globals) -----

@needs_torch
@pytest.mark.parametrize("sub", ["activation", "batchnorm", "channelshuffle", "conv", "distance",
                                 "fold", "instancenorm", "linear", "pixelshuffle", "upsampling"])
def test_nn_modules_submodule_has_torch_layers(sub):
    import importlib
    import inspect

    t = importlib.import_module("torch.nn.modules." + sub)
    e = importlib.import_module("ember.nn.modules." + sub)
    names = [n for n, v in vars(t).items() if inspect.isclass(v) and v.__module__ == t.__name__
             and not n.startswith("_")]
    assert names and [n for n in names if not hasattr(e, n)] == []


def test_multihead_attention_at_activation_path():
    from ember.nn.modules.activation import MultiheadAttention
    from ember.nn.modules.linear import NonDynamicallyQuantizableLinear

    assert MultiheadAttention is ember.nn.MultiheadAttention
    assert isinstance(MultiheadAttention(4, 2).out_proj, NonDynamicallyQuantizableLinear)
