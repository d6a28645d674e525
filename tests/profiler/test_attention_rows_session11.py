"""``scaled_dot_product_attention`` profiled side by side with PyTorch: its rows list the
call as made (``is_causal``, no mask, the default scale: NOTE [ Calls noted for the
profiler ] in ember/profiler/_recorder.py), forward and backward."""

import pytest

import ember

_ROWS = ("aten::scaled_dot_product_attention",
         "aten::_scaled_dot_product_flash_attention_for_cpu",
         "ScaledDotProductFlashAttentionForCpuBackward0",
         "aten::_scaled_dot_product_flash_attention_for_cpu_backward")


def _rows(lib, **kw):
    lib.manual_seed(0)
    q, k, v = (lib.randn(2, 2, 5, 8, requires_grad=True) for _ in range(3))
    with lib.profiler.profile(record_shapes=True) as prof:
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
        out.sum().backward()
    return [(e.name, e.input_shapes, e.concrete_inputs,
             e.cpu_parent.name if e.cpu_parent is not None else None)
            for e in prof.events() if e.name in _ROWS]


@pytest.mark.parametrize("kw", [
    {"is_causal": True}, {}, {"scale": 0.5}, {"is_causal": True, "scale": 0.25},
    {"attn_mask": "bool"}, {"attn_mask": "float"}])
def test_attention_rows_as_torch(kw):
    torch = pytest.importorskip("torch")

    def run(lib):
        args = dict(kw)
        if args.get("attn_mask") == "bool":
            args["attn_mask"] = lib.ones(5, 5, dtype=lib.bool).tril()
        elif args.get("attn_mask") == "float":
            args["attn_mask"] = lib.zeros(5, 5)
        return _rows(lib, **args)
    assert run(ember) == run(torch)


def test_attention_rows_without_shapes():
    """Without ``record_shapes`` nothing is noted, and the rows are the same."""
    q = ember.randn(1, 1, 3, 4, requires_grad=True)
    with ember.profiler.profile() as prof:
        ember.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).sum() \
            .backward()
    names = [e.name for e in prof.events()]
    assert names.count("aten::scaled_dot_product_attention") == 1
    assert ember.profiler._recorder.current_session() is None
