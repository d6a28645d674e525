"""What real programs touched on their way (issue 17, 2026-11-27): ``nn.Buffer`` as a tagged
plain tensor (NOTE [ Buffers are plain tensors ]), a tensor's Python attributes through
pickle and ``save``/``load``, the transformer's mismatched-mask deprecation warning and
integer-mask error, ``iinfo``'s printed form, and ``index_reduce``'s beta warning. Each
check runs the same code with ``T = ember`` and ``T = torch`` and compares what it saw."""

import io
import pickle
import warnings

import pytest

import ember
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _both(fn):
    import torch

    got, want = fn(ember), fn(torch)
    assert got == want
    return got


def test_buffer_is_a_tagged_plain_tensor():
    def seen(T):
        m = T.nn.Module()
        b = T.nn.Buffer(T.ones(1), persistent=False)
        m.register_buffer("z", b)  # register_buffer keeps the object and its own flag
        out = [list(m.state_dict()), m.z is b]
        m.y = T.nn.Buffer(T.ones(1), persistent=False)  # the attribute takes the tag's flag
        out.append(list(m.state_dict()))
        p = T.nn.Parameter(T.ones(2))
        bb = T.nn.Buffer(p)
        out += [type(bb).__name__, bb.requires_grad, bb.grad_fn is None, bb is p]
        c = T.nn.Buffer(T.ones(1))
        out += [isinstance(c, T.nn.Buffer), isinstance(c * 2, T.nn.Buffer),
                isinstance(c.clone(), T.nn.Buffer), isinstance(c.detach(), T.nn.Buffer),
                isinstance(T.nn.Parameter(T.ones(1)), T.nn.Buffer),
                issubclass(T.nn.Buffer, T.Tensor), T.nn.Buffer().shape == (0,)]
        back = pickle.loads(pickle.dumps(T.nn.Buffer(T.ones(1))))
        out += [type(back).__name__, isinstance(back, T.nn.Buffer)]
        buf = io.BytesIO()
        T.save({"b": T.nn.Buffer(T.ones(1))}, buf)
        buf.seek(0)
        out.append(isinstance(T.load(buf)["b"], T.nn.Buffer))
        return out

    _both(seen)


def test_tensor_attributes_survive_pickle_and_save():
    import torch

    def seen(T):
        t = T.arange(3.0)
        t.note = {"unit": "m"}
        back = pickle.loads(pickle.dumps(t))
        buf = io.BytesIO()
        T.save([t], buf)
        buf.seek(0)
        loaded = T.load(buf)[0]
        return [back.note, back.tolist(), loaded.note, loaded.tolist()]

    _both(seen)
    t = ember.ones(2)
    t.tag = 7
    buf = io.BytesIO()
    ember.save(t, buf)  # torch reads the attribute from ember's file
    buf.seek(0)
    assert torch.load(buf).tag == 7


def test_transformer_mask_warnings_and_errors():
    def seen(T):
        nn = T.nn
        T.manual_seed(0)
        x = T.ones(3, 2, 4)
        kpm = T.tensor([[False, False, True], [False, False, False]])
        am = T.zeros(3, 3)
        layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0)
        enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        out = []
        for fn in (lambda: enc(x, mask=am, src_key_padding_mask=kpm),
                   lambda: layer(x, src_mask=am, src_key_padding_mask=kpm),
                   lambda: layer(x, src_mask=am.bool(), src_key_padding_mask=kpm.float()),
                   lambda: layer.self_attn(x, x, x, key_padding_mask=kpm.long(),
                                           attn_mask=am)):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                try:
                    fn()
                    out.append(None)
                except Exception as e:  # compared by type and text
                    out.append((type(e).__name__, str(e)))
            out.append(sorted({(str(i.message), i.category.__name__) for i in w
                               if "mismatched" in str(i.message)}))
        return out

    got = _both(seen)
    assert got[-2] is not None  # the integer padding mask is refused


def test_iinfo_prints_as_torch():
    import torch

    for name in ("int8", "int32", "int64", "uint8"):
        assert repr(ember.iinfo(getattr(ember, name))) == repr(torch.iinfo(getattr(torch, name)))
        assert ember.iinfo(getattr(ember, name)).max == torch.iinfo(getattr(torch, name)).max


def test_index_reduce_warns_beta_once():
    # warned once per process in both, so either may have spoken already in this run
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ember.zeros(3).index_reduce_(0, ember.tensor([0, 1]), ember.ones(2), "amax")
        ember.zeros(3).index_reduce(0, ember.tensor([0, 1]), ember.ones(2), "amin")
    said = [str(i.message) for i in w if "beta" in str(i.message)]
    assert said in ([], ["index_reduce() is in beta and the API may change at any time."])
