"""What a sweep of new tutorial-style programs (U-Net, word LM, style transfer, samplers,
distillation, siamese nets, spatial transformers, state-dict surgery, parametrizations,
sparse GCN, int8 tricks...) found different from PyTorch: printed module forms, error
messages, parametrization assignment, warnings and where they point. Compared with torch
where it is installed; the torch-free assertions run everywhere."""

import warnings

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.utils import parametrize


def _torch():
    return pytest.importorskip("torch")


# -- printed forms -----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {}, {"padding_idx": 1}, {"max_norm": 1.0, "sparse": True},
    {"norm_type": 1.0, "scale_grad_by_freq": True, "sparse": True, "padding_idx": -1}])
def test_embedding_repr_names_every_non_default_option(kwargs):
    got = repr(nn.Embedding(10, 3, **kwargs))
    assert ("sparse=True" in got) == bool(kwargs.get("sparse"))
    torch = _torch()
    assert got == repr(torch.nn.Embedding(10, 3, **kwargs))


@pytest.mark.parametrize("kwargs", [
    {}, {"mode": "sum"}, {"max_norm": 2.0, "norm_type": 1.0, "scale_grad_by_freq": True,
                          "sparse": True, "padding_idx": 1}])
def test_embedding_bag_repr_always_names_its_mode(kwargs):
    got = repr(nn.EmbeddingBag(10, 3, **kwargs))
    assert "mode=" in got and "sparse" not in got
    torch = _torch()
    assert got == repr(torch.nn.EmbeddingBag(10, 3, **kwargs))


@pytest.mark.parametrize("args", [(2,), ((3,), [2], 1), (2, 1, 1, True, False)])
def test_avg_pool1d_keeps_one_tuples(args):
    m = nn.AvgPool1d(*args)
    assert isinstance(m.kernel_size, tuple) and len(m.stride) == 1 and len(m.padding) == 1
    x = ember.arange(10.0).view(1, 1, 10)
    torch = _torch()
    t = torch.nn.AvgPool1d(*args)
    assert repr(m) == repr(t)
    assert m(x).tolist() == t(torch.arange(10.0).view(1, 1, 10)).tolist()


# -- error messages ----------------------------------------------------------------------------

def _mha_error(lib, query_shape, kpm_shape):
    m = lib.nn.MultiheadAttention(8, 2, batch_first=True)
    q = lib.zeros(*query_shape)
    kv = lib.zeros(*(query_shape[:-2] + (5, 8)))
    with pytest.raises(AssertionError) as err:
        m(q, kv, kv, key_padding_mask=lib.zeros(*kpm_shape, dtype=lib.bool))
    return str(err.value)


@pytest.mark.parametrize("query_shape,kpm_shape", [
    ((2, 4, 8), (3, 5)), ((2, 4, 8), (2, 4)), ((2, 4, 8), (5,)), ((2, 4, 8), (2, 5, 1)),
    ((4, 8), (2, 5)), ((4, 8), (4,))])
def test_mha_key_padding_mask_shape_errors(query_shape, kpm_shape):
    got = _mha_error(ember, query_shape, kpm_shape)
    assert "key_padd" in got
    torch = _torch()
    assert got == _mha_error(torch, query_shape, kpm_shape)


@pytest.mark.parametrize("size", [(1, 1, 4, 4), [1, 1, 4, 4], "Size", (1, 1, 4)])
def test_affine_grid_errors_show_size_as_given(size):
    def message(lib):
        sz = lib.Size([1, 1, 4, 4]) if size == "Size" else size
        with pytest.raises((ValueError, NotImplementedError)) as err:
            F.affine_grid(ember.zeros(1, 3, 3), sz, align_corners=False) if lib is ember \
                else lib.nn.functional.affine_grid(lib.zeros(1, 3, 3), sz, align_corners=False)
        return type(err.value), str(err.value)

    kind, got = message(ember)
    assert "Got" in got
    torch = _torch()
    want_kind, want = message(torch)
    assert kind is want_kind
    assert got.replace("ember.", "torch.") == want


def test_meta_generator_is_refused():
    with pytest.raises(RuntimeError, match="META device type not an accelerator"):
        ember.Generator(device="meta")
    torch = _torch()
    with pytest.raises(RuntimeError, match="META device type not an accelerator"):
        torch.Generator(device="meta")


# -- parametrization assignment ----------------------------------------------------------------

class _Double(nn.Module):
    def forward(self, x):
        return x * 2


class _Shift(nn.Module):
    def forward(self, x):
        return x + 1

    def right_inverse(self, x):
        return x - 1


class _ToDouble(nn.Module):
    def forward(self, x):
        return x

    def right_inverse(self, x):
        return x.double()


class _Pair(nn.Module):
    def __init__(self, inverse):
        super().__init__()
        self.inverse = inverse

    def forward(self, a, b):
        return a + b

    def right_inverse(self, x):
        return self.inverse(x)


def test_assigning_without_right_inverse_raises_and_changes_nothing():
    m = nn.Linear(2, 2)
    parametrize.register_parametrization(m, "weight", _Double())
    parametrize.register_parametrization(m, "weight", _Shift())
    before = m.parametrizations.weight.original.clone()
    with pytest.raises(RuntimeError, match="parametrization _Double does not implement "
                                           "right_inverse."):
        m.weight = ember.ones(2, 2)
    assert m.parametrizations.weight.original.equal(before)
    m2 = nn.Linear(2, 2)
    parametrize.register_parametrization(m2, "weight", _Shift())
    m2.weight = ember.ones(2, 2)
    assert m2.parametrizations.weight.original.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert m2.weight.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_right_inverse_changing_dtype_is_refused():
    m = nn.Linear(2, 2)
    parametrize.register_parametrization(m, "weight", _Shift())
    parametrize.register_parametrization(m, "weight", _ToDouble(), unsafe=True)
    before = m.parametrizations.weight.original.clone()
    with pytest.raises(ValueError, match="has dtype ember.float64 while `original` has dtype "
                                         "ember.float32"):
        m.weight = ember.ones(2, 2)
    assert m.parametrizations.weight.original.equal(before)


@pytest.mark.parametrize("inverse,message", [
    (lambda x: (x,), "must return a sequence of tensors of length 2. Got a sequence of "
                     "length 1."),
    (lambda x: 3, "must return a sequence of tensors. Got int."),
    (lambda x: (x, x.double()), "Tensor 1 returned by `right_inverse` has dtype"),
])
def test_multi_tensor_right_inverse_is_checked_before_anything_changes(inverse, message):
    m = nn.Linear(2, 2)
    pair = _Pair(lambda x: (x / 2, x / 2))
    parametrize.register_parametrization(m, "weight", pair)
    before = [m.parametrizations.weight.original0.clone(),
              m.parametrizations.weight.original1.clone()]
    pair.inverse = inverse
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        m.weight = ember.ones(2, 2)
    assert m.parametrizations.weight.original0.equal(before[0])
    assert m.parametrizations.weight.original1.equal(before[1])
    pair.inverse = lambda x: [x / 4, x * 3 / 4]
    m.weight = ember.ones(2, 2)
    assert m.weight.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert m.parametrizations.weight.original0.tolist() == [[0.25, 0.25], [0.25, 0.25]]


# -- warnings: text, once-ness and the line they point at --------------------------------------

def _record(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [w for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("call", [
    lambda: F.kl_div(ember.zeros(3, 2), ember.zeros(3, 2)),
    lambda: F.mse_loss(ember.zeros(3, 1), ember.zeros(3)),
    lambda: F.l1_loss(ember.zeros(3, 1), ember.zeros(3)),
    lambda: F.smooth_l1_loss(ember.zeros(3, 1), ember.zeros(3)),
    lambda: ember.zeros(3, 1).to_sparse_csr(),
])
def test_op_warnings_point_at_the_calling_line(call):
    caught = _record(call)
    if not caught:  # a once-per-process warning already given by another test
        pytest.skip("warned earlier in this process")
    assert caught[0].filename == __file__


def test_module_loss_warning_points_at_the_module():
    caught = _record(lambda: nn.KLDivLoss()(ember.zeros(3, 2), ember.zeros(3, 2)))
    assert caught and caught[0].filename.replace("\\", "/").endswith("nn/modules/loss.py")


def test_scatter_reduce_deprecation_warns_once_with_tensor_src_only():
    from ember import _settings

    text = "The reduce argument of torch.scatter with Tensor src is deprecated"
    _settings._warned_once.discard(next((k for k in _settings._warned_once if text in k), ""))
    i = ember.tensor([[0, 1]])
    assert not _record(lambda: ember.zeros(1, 3).scatter_(1, i, 2.0, reduce="add"))
    first = _record(lambda: ember.zeros(1, 3).scatter_(1, i, ember.ones(1, 2), reduce="add"))
    assert [str(w.message)[:len(text)] for w in first] == [text]
    assert first[0].filename == __file__
    assert not _record(lambda: ember.zeros(1, 3).scatter(1, i, ember.ones(1, 2),
                                                         reduce="multiply"))
    out = ember.zeros(1, 3).scatter(1, i, ember.ones(1, 2), reduce="add")
    assert out.tolist() == [[1.0, 1.0, 0.0]]


def test_compressed_sparse_beta_warning_is_said_once_for_all_layouts():
    from ember import _settings

    _settings._warned_once.discard("sparse compressed beta")
    first = _record(lambda: ember.eye(2).to_sparse_csc())
    assert [str(w.message) for w in first] == [
        "Sparse CSC tensor support is in beta state. If you miss a functionality in the sparse "
        "tensor support, please submit a feature request to "
        "https://github.com/pytorch/pytorch/issues."]
    assert not _record(lambda: ember.eye(2).to_sparse_csr())


def test_quantized_tensor_creation_says_it_is_deprecated():
    from ember import _settings

    text = "torch.quantize_per_tensor, torch.quantize_per_channel and other quantized"
    _settings._warned_once.discard(next((k for k in _settings._warned_once if text in k), ""))
    first = _record(lambda: ember.quantize_per_tensor(ember.ones(2), 0.1, 0, ember.quint8))
    assert [str(w.message)[:len(text)] for w in first] == [text]
    assert first[0].filename == __file__
    assert not _record(lambda: ember.quantize_per_tensor(ember.ones(2), 0.1, 0, ember.quint8))
