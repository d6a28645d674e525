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


# -- a range as an index ("What is torch.nn really?": input[range(n), target]) -------------

@needs_torch
@pytest.mark.parametrize("index", [lambda n: (range(n), [0, 2, 1]), lambda n: range(n - 1),
                                   lambda n: (slice(None), range(1, 3)), lambda n: range(0)])
def test_range_index_selects_as_a_list(index):
    data = [[float(4 * i + j) for j in range(4)] for i in range(3)]
    got = ember.tensor(data)[index(3)]
    want = torch.tensor(data)[index(3)]
    assert got.tolist() == want.tolist() and tuple(got.shape) == tuple(want.shape)


def test_range_index_gradient_reaches_the_picked_entries():
    x = ember.zeros(3, 4, requires_grad=True)
    x[range(3), [0, 2, 1]].sum().backward()
    assert x.grad.tolist() == [[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]]


def test_range_index_assignment_writes_the_rows():
    x = ember.ones(3, 2)
    x[range(2)] = 0
    assert x.tolist() == [[0, 0], [0, 0], [1, 1]]


# -- MaxPool2d then ReLU(inplace=True) (the spatial transformer tutorial's localization net) --

@pytest.mark.parametrize("pool", [lambda: ember.nn.MaxPool2d(2, stride=2),
                                  lambda: ember.nn.AdaptiveMaxPool2d(2)])
def test_inplace_relu_after_max_pool_backpropagates(pool):
    x = ember.arange(32.0).reshape(1, 2, 4, 4).requires_grad_()
    net = ember.nn.Sequential(pool(), ember.nn.ReLU(True))
    net(x).sum().backward()
    assert x.grad.sum().item() == 8.0  # one window maximum each, 2 channels x 4 windows


# -- the warnings PyTorch gives for legacy arguments ------------------------------------------

def _warned(fn):
    import warnings

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in shown]


@needs_torch
@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.l1_loss(m.zeros(2), m.zeros(2), size_average=False),
    lambda m: m.nn.functional.nll_loss(m.zeros(2, 3), m.tensor([0, 1]), reduce=False),
    lambda m: m.nn.MSELoss(size_average=True),
    lambda m: m.nn.functional.affine_grid(m.eye(2, 3).unsqueeze(0), (1, 1, 2, 2)),
    lambda m: m.nn.functional.grid_sample(m.ones(1, 1, 2, 2), m.zeros(1, 1, 1, 2)),
    lambda m: m.nn.functional.upsample(m.ones(1, 1, 2), scale_factor=2),
    lambda m: m.nn.functional.upsample_nearest(m.ones(1, 1, 2), scale_factor=2),
    lambda m: m.nn.functional.upsample_bilinear(m.ones(1, 1, 2, 2), scale_factor=2),
])
def test_legacy_argument_warns_as_torch(call):
    assert _warned(lambda: call(ember)) == _warned(lambda: call(torch))


@needs_torch
def test_explicit_align_corners_warns_nothing():
    grid = ember.nn.functional.affine_grid(ember.eye(2, 3).unsqueeze(0), (1, 1, 2, 2),
                                           align_corners=False)
    assert _warned(lambda: ember.nn.functional.grid_sample(ember.ones(1, 1, 2, 2), grid,
                                                           align_corners=False)) == []


# -- nn.Dropout2d on (N, C) activations (the mnist_rnn example) --------------------------------

@needs_torch
@pytest.mark.parametrize("fn", ["dropout2d", "dropout3d"])
@pytest.mark.parametrize("shape", [(4, 6), (2, 3, 5), (3, 4, 4, 4), (2, 3, 2, 2, 2)])
def test_channel_dropout_any_rank_warns_and_shapes_as_torch(fn, shape):
    got = _warned(lambda: getattr(ember.nn.functional, fn)(ember.ones(shape), 0.5))
    want = _warned(lambda: getattr(torch.nn.functional, fn)(torch.ones(shape), 0.5))
    assert got == want
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = getattr(ember.nn.functional, fn)(ember.ones(shape), 0.5)
    assert tuple(out.shape) == shape


def test_dropout2d_of_a_matrix_draws_per_element():
    ember.manual_seed(0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = ember.nn.Dropout2d(0.5)(ember.ones(64, 64))
    rows = {tuple(r) for r in out.tolist()}
    assert len(rows) > 1 and set(out.flatten().tolist()) == {0.0, 2.0}


def test_dropout3d_unbatched_drops_whole_channels():
    ember.manual_seed(0)
    out = ember.nn.functional.dropout3d(ember.ones(8, 2, 2, 2), 0.5)
    assert all(len(set(out[c].flatten().tolist())) == 1 for c in range(8))


# -- the sparse-invariant warning (the GAT example's sparse adjacency matrix) --------------------

def _fresh_sparse_warning():
    from ember import _settings

    _settings._warned_once.difference_update(
        {m for m in _settings._warned_once if m.startswith("Sparse invariant checks")})


@pytest.mark.parametrize("build", [
    lambda: ember.sparse_coo_tensor([[0], [1]], [1.0], (2, 2)),
    lambda: ember.sparse_csr_tensor([0, 1, 1], [0], [1.0], (2, 2)),
])
def test_sparse_constructor_warns_once_about_unchecked_invariants(build):
    _fresh_sparse_warning()
    shown = _warned(lambda: (build(), build()))
    assert sum(m.startswith("Sparse invariant checks are implicitly disabled") for m in shown) == 1


@pytest.mark.parametrize("build", [
    lambda: ember.sparse_coo_tensor([[0], [1]], [1.0], (2, 2), check_invariants=False),
    lambda: ember.eye(2).to_sparse(),
    lambda: ember.sparse.spdiags(ember.ones(1, 3), ember.tensor([0]), (3, 3)),
])
def test_sparse_without_user_indices_or_with_explicit_choice_warns_nothing(build):
    _fresh_sparse_warning()
    assert _warned(build) == []


# -- return types built from one sequence, as torch.return_types.max((values, indices)) --------

@needs_torch
@pytest.mark.parametrize("args", [lambda m: ((m.ones(2), m.zeros(2, dtype=m.long)),),
                                  lambda m: ([m.ones(2), m.zeros(2, dtype=m.long)], {})])
def test_return_type_from_one_sequence_as_torch(args):
    got = ember.return_types.max(*args(ember))
    want = torch.return_types.max(*args(torch))
    assert repr(got).replace("ember.", "torch.") == repr(want)
    assert repr(pickle.loads(pickle.dumps(got))) == repr(got)


@needs_torch
@pytest.mark.parametrize("args", [lambda m: ((m.ones(2),),),
                                  lambda m: ((m.ones(2), m.ones(2)), 3)])
def test_return_type_bad_sequence_raises_as_torch(args):
    with pytest.raises(TypeError) as want:
        torch.return_types.max(*args(torch))
    with pytest.raises(TypeError) as got:
        ember.return_types.max(*args(ember))
    assert str(got.value).replace("ember.", "torch.") == str(want.value)


# -- the copy-construct warning points at the user's line, in torch's words ------------------------

def test_tensor_of_tensor_warns_at_callers_line():
    import warnings

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        ember.tensor(ember.ones(2))  # the line the warning must name
    (w,) = [w for w in shown if "copy construct" in str(w.message)]
    assert w.filename == __file__
    assert str(w.message).endswith("rather than torch.tensor(sourceTensor).")


# -- a full backward hook on a module whose inputs need no gradient warns as torch ----------------

@needs_torch
@pytest.mark.parametrize("inputs_need_grad", [False, True])
def test_full_backward_hook_without_input_grads_warns_as_torch(inputs_need_grad):
    import warnings

    def warned(lib):
        m = lib.nn.Linear(2, 2)
        m.register_full_backward_hook(lambda *a: None)
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            m(lib.ones(1, 2, requires_grad=inputs_need_grad)).sum().backward()  # the line
        return [(w.category, str(w.message), w.filename, w.lineno) for w in shown]

    mine, theirs = warned(ember), warned(torch)
    assert len(mine) == len(theirs) == (0 if inputs_need_grad else 1)
    assert [w[:3] for w in mine] == [w[:3] for w in theirs]
    assert [w[2] for w in mine] == [__file__] * len(mine)


# -- finfo's resolution is torch's 10**-precision, not NumPy's value rounded to the dtype -------

@needs_torch
@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64",
                                  "float8_e4m3fn"])
def test_finfo_resolution_and_repr_match_torch(name):
    mine, theirs = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
    assert mine.resolution == theirs.resolution
    assert repr(mine) == repr(theirs)


# -- assert_close fails with torch's message (test suites print it) -------------------------------

_CLOSE_CASES = {
    "shape": lambda t: (t.ones(2), t.ones(3)),
    "dtype": lambda t: (t.ones(2, dtype=t.int64), t.ones(2)),
    "ints": lambda t: (t.tensor([1, 2]), t.tensor([1, 3])),
    "scalar_tensor": lambda t: (t.tensor(1.0), t.tensor(1.5)),
    "floats": lambda t: (t.tensor([1.0, 2.0]), t.tensor([1.0, 2.1])),
    "nan": lambda t: (t.tensor([1.0, float("nan")]), t.tensor([1.0, 2.0])),
    "zero_expected": lambda t: (t.tensor([1.0]), t.tensor([0.0])),
    "sequence_item": lambda t: ([t.ones(1), t.ones(1)], [t.ones(1), t.zeros(1)]),
    "sequence_length": lambda t: ([1, 2], [1, 2, 3]),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(_CLOSE_CASES))
def test_assert_close_message_matches_torch(case):
    def message(lib):
        with pytest.raises(AssertionError) as info:
            lib.testing.assert_close(*_CLOSE_CASES[case](lib))
        return str(info.value)

    assert message(ember).replace("ember.", "torch.") == message(torch)


def test_assert_close_msg_replaces_message():
    with pytest.raises(AssertionError, match="^custom$"):
        ember.testing.assert_close(ember.ones(1), ember.zeros(1), msg="custom")


# -- LBFGS keeps torch's state entries (printed and resumed by programs) --------------------------

@needs_torch
@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_state_keys_match_torch(line_search):
    def keys(lib):
        lib.manual_seed(0)
        m = lib.nn.Linear(3, 2)
        opt = lib.optim.LBFGS(m.parameters(), history_size=7, line_search_fn=line_search)

        def closure():
            opt.zero_grad()
            loss = (m(lib.ones(4, 3)) ** 2).sum()
            loss.backward()
            return loss

        for _ in range(2):
            opt.step(closure)
        state = opt.state_dict()["state"][0]
        return sorted(state), len(state["al"])

    assert keys(ember) == keys(torch)
