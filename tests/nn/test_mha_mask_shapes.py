"""MultiheadAttention takes only the attn_mask shapes torch takes, with torch's exception types
and messages: (L, S) or (N*H, L, S) for batched queries, (H, L, S) for unbatched ones; nothing
broadcasts (ember once accepted (1, L, S) and (N*H, 1, S))."""

import pytest

import ember

BATCHED = [(4, 3, 3), (3, 3), (1, 3, 3), (4, 1, 3), (5, 3, 3), (2, 3), (4, 3, 2), (3,),
           (2, 4, 3, 3)]
UNBATCHED = [(2, 3, 3), (3, 3), (1, 3, 3), (3,)]


def _outcome(T, batched, shape):
    T.manual_seed(0)
    m = T.nn.MultiheadAttention(4, 2)
    q = T.randn(3, 2, 4) if batched else T.randn(3, 4)
    try:
        out, _ = m(q, q, q, attn_mask=T.zeros(shape, dtype=T.bool))
    except (RuntimeError, AssertionError) as e:
        return type(e).__name__, str(e).replace("torch.Size", "Size").replace("ember.Size", "Size")
    return "ok", tuple(out.shape)


@pytest.mark.parametrize("batched,shape", [(True, s) for s in BATCHED]
                         + [(False, s) for s in UNBATCHED])
def test_attn_mask_shapes_as_torch(batched, shape):
    torch = pytest.importorskip("torch")
    assert _outcome(ember, batched, shape) == _outcome(torch, batched, shape)


def test_broadcastable_3d_mask_refused_without_torch():
    kind, message = _outcome(ember, True, (1, 3, 3))
    assert kind == "RuntimeError" and "should be (4, 3, 3)" in message
    kind, message = _outcome(ember, True, (3,))
    assert kind == "AssertionError" and "found 1-D tensor" in message
