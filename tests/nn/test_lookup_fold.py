"""An LSTM fed straight from an embedding projects the table instead of every token (NOTE
[ Lookups a layer can fold ] in ember/_ops/nn_ops.py): when the fold is taken, when it is
not, and that values and every gradient are those of the unfolded layer."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember._ops import nn_ops, nn_rnn
from ember.autograd import gradcheck, gradgradcheck

from ._compare import copy_weights, to_torch

VOCAB, STEPS, BATCH = 7, 6, 4


@pytest.fixture
def lookups(monkeypatch):
    """Records the ``lookup`` each fused LSTM layer call received."""
    seen = []
    real = nn_rnn.lstm_layer

    def spy(*args, lookup=None, **kwargs):
        seen.append(lookup)
        return real(*args, lookup=lookup, **kwargs)

    monkeypatch.setattr(nn_rnn, "lstm_layer", spy)
    return seen


def _model(batch_first=False, bidirectional=False, proj_size=0, seed=0):
    ember.manual_seed(seed)
    emb = nn.Embedding(VOCAB, 5, dtype=ember.float64)
    rnn = nn.LSTM(5, 4, num_layers=2, batch_first=batch_first, bidirectional=bidirectional,
                  proj_size=proj_size, dtype=ember.float64)
    return emb, rnn


def _tokens(shape, seed=1):
    return ember.from_numpy(np.random.default_rng(seed).integers(0, VOCAB, shape))


def _run(emb, rnn, tokens, fold):
    """Output, final states and every parameter's gradient, with the fold or without it
    (a copy of the lookup's output is not a lookup's output)."""
    for p in [*emb.parameters(), *rnn.parameters()]:
        p.grad = None
    x = emb(tokens)
    out, (h, c) = rnn(x if fold else x.clone())
    g = np.random.default_rng(2)
    loss = sum((t * ember.from_numpy(g.standard_normal(tuple(t.shape)))).sum()
               for t in (out, h, c))
    loss.backward()
    return [out, h, c] + [p.grad for p in [*emb.parameters(), *rnn.parameters()]]


@pytest.mark.parametrize("batch_first,bidirectional,proj_size,shape", [
    (False, False, 0, (STEPS, BATCH)),
    (True, False, 0, (BATCH, STEPS)),
    (True, True, 0, (BATCH, STEPS)),
    (False, True, 3, (STEPS, BATCH)),
    (False, False, 0, (2 * VOCAB,)),        # unbatched
])
def test_folded_layer_equals_the_unfolded_one(lookups, batch_first, bidirectional,
                                              proj_size, shape):
    emb, rnn = _model(batch_first, bidirectional, proj_size)
    tokens = _tokens(shape)
    folded = _run(emb, rnn, tokens, fold=True)
    dirs = 2 if bidirectional else 1
    # the first layer's directions take the table; the second layer's input is no lookup
    assert [k is not None for k in lookups] == [True] * dirs + [False] * dirs
    table, indices = lookups[0]
    assert table.shape == (VOCAB, 5) and not table.requires_grad
    want = tokens.t() if batch_first else (tokens.unsqueeze(1) if len(shape) == 1 else tokens)
    assert ember.equal(indices, want)
    lookups.clear()
    plain = _run(emb, rnn, tokens, fold=False)
    assert all(k is None for k in lookups)
    for got, exp in zip(folded, plain):
        np.testing.assert_allclose(got.detach().numpy(), exp.detach().numpy(), rtol=1e-12,
                                   atol=1e-12)


def test_not_folded_when_the_lookup_or_its_table_changed(lookups):
    emb, rnn = _model()
    tokens = _tokens((STEPS, BATCH))
    x = emb(tokens)
    x.mul_(2)                              # the output was written to
    rnn(x)
    x = emb(tokens)
    x.data = x.detach() * 2                # the output was given new data
    rnn(x)
    x = emb(tokens)
    with ember.no_grad():
        emb.weight.add_(1)                 # the table moved on since the lookup
    out, _ = rnn(x)
    assert lookups == [None] * 6
    # the layer used the looked-up values, not the table's new ones
    ref, _ = rnn(x.clone())
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    first = emb(tokens)
    emb(tokens)                            # a later lookup does not hide an earlier one:
    rnn(first)                             # each output carries its own record
    assert lookups[-2] is not None and lookups[-1] is None


def test_lookup_record_dies_with_its_output(lookups):
    import weakref

    emb, rnn = _model()
    x = emb(_tokens((STEPS, BATCH)))
    table = weakref.ref(x.__dict__["_lookup"][3])
    del x
    emb.weight.data = emb.weight.data.clone()   # the old table array is referenced by no one
    assert table() is None


def test_not_folded_for_inference_tensors(lookups):
    # an inference tensor keeps no version counter, so a write to it would go unseen
    emb, rnn = _model()
    tokens = _tokens((STEPS, BATCH))
    with ember.inference_mode():
        x = emb(tokens)
        x.mul_(2)
        out, _ = rnn(x)
        ref, _ = rnn(x.clone())
    assert lookups == [None, None, None, None]
    np.testing.assert_array_equal(out.numpy(), ref.numpy())


def test_not_folded_when_the_vocabulary_is_over_half_the_tokens(lookups):
    emb, rnn = _model()
    rnn(emb(_tokens((2, 3))))              # 7 rows against 6 tokens
    rnn(emb(_tokens((2, 7))))              # 7 rows against 14 tokens
    assert [k is not None for k in lookups] == [False, False, True, False]


def test_gradient_with_respect_to_the_lookup_output_is_unchanged(lookups):
    emb, rnn = _model()
    tokens = _tokens((STEPS, BATCH))
    results = []
    for fold in (True, False):
        x = emb(tokens)
        seen = []
        x.register_hook(lambda g: seen.append(g))
        out, _ = rnn(x if fold else x.clone())
        gx, gw = ember.autograd.grad(out.pow(2).sum(), [x, emb.weight], retain_graph=True)
        out.pow(2).sum().backward()
        results.append((gx, gw, seen[-1]))
    assert lookups[0] is not None
    for got, exp in zip(*results):
        np.testing.assert_allclose(got.detach().numpy(), exp.detach().numpy(), rtol=1e-12,
                                   atol=1e-12)


def _layer_from_table(tokens, h0, c0):
    def fn(table, w_ih, b, w_hh):
        x = F.embedding(tokens, table)
        found = nn_ops.lookup_source(x)
        assert found is not None
        return nn_rnn.lstm_layer(x, w_ih, b, h0, c0, w_hh, lookup=found)
    return fn


def test_gradcheck_through_the_fold():
    rng = np.random.default_rng(3)
    tokens = _tokens((3, 2))
    args = [ember.from_numpy(rng.standard_normal(s) * 0.7).requires_grad_()
            for s in ((VOCAB, 3), (12, 3), (12,), (12, 3))]
    h0, c0 = (ember.from_numpy(rng.standard_normal((2, 3))) for _ in range(2))
    fn = _layer_from_table(tokens, h0, c0)
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


@pytest.mark.parametrize("batch_first", [False, True])
def test_matches_torch(lookups, batch_first):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    t_emb, t_rnn = torch.nn.Embedding(VOCAB, 16), torch.nn.LSTM(16, 8, 2, batch_first=batch_first)
    emb, rnn = nn.Embedding(VOCAB, 16), nn.LSTM(16, 8, 2, batch_first=batch_first)
    copy_weights(emb, t_emb)
    copy_weights(rnn, t_rnn)
    tokens = _tokens((BATCH, STEPS * 2) if batch_first else (STEPS * 2, BATCH))
    out, (h, c) = rnn(emb(tokens))
    t_out, (t_h, t_c) = t_rnn(t_emb(to_torch(tokens)))
    assert lookups[0] is not None
    for a, b in ((out, t_out), (h, t_h), (c, t_c)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4, atol=1e-5)
    (out.pow(2).sum() + c.sum()).backward()
    (t_out.pow(2).sum() + t_c.sum()).backward()
    for (name, p), q in zip([*emb.named_parameters(), *rnn.named_parameters()],
                            [*t_emb.parameters(), *t_rnn.parameters()]):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)


def test_input_dtype_must_match_the_weights():
    rnn = nn.LSTM(5, 4, dtype=ember.float64)
    with pytest.raises(ValueError, match="does not match weight dtype"):
        rnn(ember.randn(3, 2, 5))
