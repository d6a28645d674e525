"""Random ``torch.nn`` module programs for tests/differential/programs.py.

NOTE [ Differential module programs ]
The OpInfo table calls functional forms with a few fixed configurations; a module adds its
constructor's checks, its ``repr`` (``extra_repr``), its parameters' names, order and shapes
(``state_dict``) and its buffers' updates (running statistics). A program here builds one
module from a random constructor call (every argument drawn, some invalid on purpose, so
refusals are compared too), overwrites its parameters with the same deterministic values
in both libraries, runs it on a deterministic input, and leaves ``(repr, state_dict keys and
shapes, outputs, gradients of every input and parameter, state_dict values)`` in ``out``.
Modules run in float64 (float32 now and then) with dropout 0, so that nothing random is
drawn and the values compare within the family's tolerance.
"""

from __future__ import annotations

#: shared by every module program: deterministic values for parameters and inputs, and the
#: result tuple
_PROLOGUE = """\
def fill(m):
    with T.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_((T.sin(T.arange(p.numel(), dtype=T.float64) * 0.37 + i) * 0.5)
                    .reshape(p.shape))
def data(shape, dtype, grad=True):
    n = 1
    for s in shape:
        n *= s
    x = (T.cos(T.arange(n, dtype=T.float64) * 0.713 + 0.2) * 2).reshape(shape).to(dtype)
    return x.requires_grad_() if grad else x
def finish(m, y, inputs):
    flat = []
    for v in (y if isinstance(y, tuple) else (y,)):
        flat.extend(v if isinstance(v, tuple) else (v,))
    flat = tuple(v for v in flat if v is not None)
    L = sum((v * T.sin(T.arange(v.numel(), dtype=T.float64) * 1.3 + 0.1).reshape(v.shape)
             .to(v.dtype)).sum() for v in flat if v.requires_grad)
    wrt = [t for t in inputs if t.requires_grad] + list(m.parameters())
    grads = T.autograd.grad(L, wrt, allow_unused=True) if isinstance(L, T.Tensor) else ()
    keys = str([(k, tuple(v.shape)) for k, v in m.state_dict().items()])
    return (repr(m), keys, flat, tuple(grads), tuple(m.state_dict().values()))
"""


def _pick(rng, *options):
    return options[int(rng.integers(len(options)))]


def _tup(rng, nd, lo, hi):
    """An int or an nd-tuple of ints in [lo, hi)."""
    if rng.random() < 0.5:
        return int(rng.integers(lo, hi))
    return tuple(int(v) for v in rng.integers(lo, hi, size=nd))


def _spatial(rng, nd, lo=1, hi=7):
    return tuple(int(v) for v in rng.integers(lo, hi, size=nd))


def _conv(rng, nd):
    groups = _pick(rng, 1, 1, 2, 3)
    cin = groups * int(rng.integers(1, 3))
    cout = groups * int(rng.integers(1, 3)) if rng.random() < 0.95 else 5
    k = _tup(rng, nd, 1, 4)
    padding = _pick(rng, 0, 1, _tup(rng, nd, 0, 3), "same", "valid")
    stride = 1 if padding == "same" else _tup(rng, nd, 1, 3)
    mode = _pick(rng, "zeros", "zeros", "reflect", "replicate", "circular")
    args = (f"{cin}, {cout}, {k!r}, stride={stride!r}, padding={padding!r}, "
            f"dilation={_tup(rng, nd, 1, 3)!r}, groups={groups}, "
            f"bias={bool(rng.random() < 0.7)}, padding_mode={mode!r}")
    shape = (int(rng.integers(1, 3)), cin) + _spatial(rng, nd, 3, 8)
    if rng.random() < 0.15:
        shape = shape[1:]  # unbatched
    return f"T.nn.Conv{nd}d({args})", [shape], ""


def _conv_t(rng, nd):
    groups = _pick(rng, 1, 1, 2)
    cin, cout = groups * int(rng.integers(1, 3)), groups * int(rng.integers(1, 3))
    stride = _tup(rng, nd, 1, 3)
    dilation = _tup(rng, nd, 1, 3)
    out_pad = _pick(rng, 0, 0, 1, _tup(rng, nd, 0, 2))
    args = (f"{cin}, {cout}, {_tup(rng, nd, 1, 4)!r}, stride={stride!r}, "
            f"padding={_tup(rng, nd, 0, 2)!r}, output_padding={out_pad!r}, groups={groups}, "
            f"bias={bool(rng.random() < 0.7)}, dilation={dilation!r}")
    shape = (int(rng.integers(1, 3)), cin) + _spatial(rng, nd, 1, 5)
    return f"T.nn.ConvTranspose{nd}d({args})", [shape], ""


def _max_pool(rng, nd):
    k = _tup(rng, nd, 1, 4)
    args = (f"{k!r}, stride={_pick(rng, None, _tup(rng, nd, 1, 3))!r}, "
            f"padding={_pick(rng, 0, 1, _tup(rng, nd, 0, 2))!r}, "
            f"dilation={_pick(rng, 1, _tup(rng, nd, 1, 3))!r}, "
            f"return_indices={bool(rng.random() < 0.3)}, ceil_mode={bool(rng.random() < 0.4)}")
    shape = (int(rng.integers(1, 3)), 2) + _spatial(rng, nd, 2, 8)
    return f"T.nn.MaxPool{nd}d({args})", [shape], ""


def _avg_pool(rng, nd):
    k = _tup(rng, nd, 1, 4)
    args = (f"{k!r}, stride={_pick(rng, None, _tup(rng, nd, 1, 3))!r}, "
            f"padding={_pick(rng, 0, 1, _tup(rng, nd, 0, 2))!r}, "
            f"ceil_mode={bool(rng.random() < 0.4)}, "
            f"count_include_pad={bool(rng.random() < 0.5)}")
    if nd > 1 and rng.random() < 0.3:
        args += f", divisor_override={int(rng.integers(1, 5))}"
    shape = (int(rng.integers(1, 3)), 2) + _spatial(rng, nd, 2, 8)
    return f"T.nn.AvgPool{nd}d({args})", [shape], ""


def _lp_pool(rng, nd):
    args = (f"{_pick(rng, 1, 2, 3.0, 1.5)!r}, {_tup(rng, nd, 1, 4)!r}, "
            f"stride={_pick(rng, None, _tup(rng, nd, 1, 3))!r}, "
            f"ceil_mode={bool(rng.random() < 0.4)}")
    shape = (int(rng.integers(1, 3)), 2) + _spatial(rng, nd, 3, 8)
    return f"T.nn.LPPool{nd}d({args})", [shape], ""


def _adaptive(rng, nd):
    kind = _pick(rng, "Avg", "Max")
    size = _pick(rng, int(rng.integers(1, 5)),
                 tuple(_pick(rng, None, int(rng.integers(1, 6))) for _ in range(nd)))
    if nd == 1 and isinstance(size, tuple):
        size = size[0] or 2
    args = repr(size)
    if kind == "Max":
        args += f", return_indices={bool(rng.random() < 0.3)}"
    shape = (int(rng.integers(1, 3)), 2) + _spatial(rng, nd, 1, 9)
    if rng.random() < 0.2:
        shape = shape[1:]
    return f"T.nn.Adaptive{kind}Pool{nd}d({args})", [shape], ""


def _batch_norm(rng, nd):
    c = int(rng.integers(1, 4))
    args = (f"{c}, eps={_pick(rng, 1e-5, 0.1)!r}, momentum={_pick(rng, 0.1, 0.5, None)!r}, "
            f"affine={bool(rng.random() < 0.7)}, "
            f"track_running_stats={bool(rng.random() < 0.7)}")
    shape = (int(rng.integers(2, 4)), c) + _spatial(rng, nd - 1 if nd == 1 else nd, 1, 4)
    if nd == 1 and rng.random() < 0.5:
        shape = shape[:2]
    return f"T.nn.BatchNorm{nd}d({args})", [shape], ""


def _instance_norm(rng, nd):
    c = int(rng.integers(1, 4))
    args = (f"{c}, eps={_pick(rng, 1e-5, 0.1)!r}, momentum={_pick(rng, 0.1, 0.5)!r}, "
            f"affine={bool(rng.random() < 0.5)}, "
            f"track_running_stats={bool(rng.random() < 0.4)}")
    shape = (int(rng.integers(1, 3)), c) + _spatial(rng, nd, 2, 5)
    if rng.random() < 0.2:
        shape = shape[1:]
    return f"T.nn.InstanceNorm{nd}d({args})", [shape], ""


def _layer_norm(rng):
    shape = (2,) + _spatial(rng, int(rng.integers(1, 3)), 1, 5)
    ns = shape[-int(rng.integers(1, len(shape))):]
    ns = ns[0] if len(ns) == 1 and rng.random() < 0.5 else list(ns)
    args = (f"{ns!r}, eps={_pick(rng, 1e-5, 0.1)!r}, "
            f"elementwise_affine={bool(rng.random() < 0.7)}, bias={bool(rng.random() < 0.7)}")
    return f"T.nn.LayerNorm({args})", [shape], ""


def _rms_norm(rng):
    shape = (2,) + _spatial(rng, int(rng.integers(1, 3)), 1, 5)
    ns = list(shape[-int(rng.integers(1, len(shape))):])
    args = (f"{ns!r}, eps={_pick(rng, None, 1e-5, 0.1)!r}, "
            f"elementwise_affine={bool(rng.random() < 0.7)}")
    return f"T.nn.RMSNorm({args})", [shape], ""


def _group_norm(rng):
    g = int(rng.integers(1, 4))
    c = g * int(rng.integers(1, 3)) if rng.random() < 0.9 else g + 1
    args = f"{g}, {c}, eps={_pick(rng, 1e-5, 0.1)!r}, affine={bool(rng.random() < 0.7)}"
    shape = (int(rng.integers(1, 3)), c) + _spatial(rng, int(rng.integers(0, 3)), 1, 4)
    return f"T.nn.GroupNorm({args})", [shape], ""


def _local_response(rng):
    args = (f"{int(rng.integers(1, 5))}, alpha={_pick(rng, 1e-4, 0.5)!r}, "
            f"beta={_pick(rng, 0.75, 1.0)!r}, k={_pick(rng, 1.0, 2.0)!r}")
    shape = (2, int(rng.integers(1, 6))) + _spatial(rng, int(rng.integers(0, 3)), 1, 4)
    return f"T.nn.LocalResponseNorm({args})", [shape], ""


def _rnn(rng):
    kind = _pick(rng, "RNN", "LSTM", "GRU")
    inp, hid = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    layers = int(rng.integers(1, 3))
    batch_first = bool(rng.random() < 0.5)
    bidir = bool(rng.random() < 0.4)
    args = (f"{inp}, {hid}, num_layers={layers}, bias={bool(rng.random() < 0.8)}, "
            f"batch_first={batch_first}, bidirectional={bidir}")
    if kind == "RNN":
        args += f", nonlinearity={_pick(rng, 'tanh', 'relu')!r}"
    proj = 0
    if kind == "LSTM" and rng.random() < 0.3:
        proj = int(rng.integers(1, hid + 1))
        args += f", proj_size={proj}"
    seq, batch = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    shape = (batch, seq, inp) if batch_first else (seq, batch, inp)
    shapes = [shape]
    if rng.random() < 0.2:
        shapes = [(seq, inp)]
    elif rng.random() < 0.4:
        h_size = proj or hid
        h = (layers * (2 if bidir else 1), batch, h_size)
        shapes.append(h)
        if kind == "LSTM":
            shapes.append(h[:2] + (hid,))
    call = ""
    if len(shapes) == 3:
        call = "m(xs[0], (xs[1], xs[2]))"
    return f"T.nn.{kind}({args})", shapes, call


def _cell(rng):
    kind = _pick(rng, "RNNCell", "LSTMCell", "GRUCell")
    inp, hid = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    args = f"{inp}, {hid}, bias={bool(rng.random() < 0.8)}"
    if kind == "RNNCell":
        args += f", nonlinearity={_pick(rng, 'tanh', 'relu')!r}"
    batch = int(rng.integers(1, 3))
    shapes = [(batch, inp)] if rng.random() < 0.8 else [(inp,)]
    if rng.random() < 0.5:
        h = shapes[0][:-1] + (hid,)
        shapes += [h, h] if kind == "LSTMCell" else [h]
    call = "m(xs[0], (xs[1], xs[2]))" if len(shapes) == 3 else ""
    return f"T.nn.{kind}({args})", shapes, call


def _transformer(rng):
    kind = _pick(rng, "TransformerEncoderLayer", "TransformerDecoderLayer")
    nhead = _pick(rng, 1, 2)
    d = nhead * int(rng.integers(1, 3)) * 2
    batch_first = bool(rng.random() < 0.5)
    args = (f"{d}, {nhead}, dim_feedforward={int(rng.integers(2, 7))}, dropout=0.0, "
            f"activation={_pick(rng, 'relu', 'gelu')!r}, "
            f"layer_norm_eps={_pick(rng, 1e-5, 0.1)!r}, batch_first={batch_first}, "
            f"norm_first={bool(rng.random() < 0.5)}, bias={bool(rng.random() < 0.8)}")
    seq, batch = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    shape = (batch, seq, d) if batch_first else (seq, batch, d)
    shapes = [shape]
    if kind == "TransformerDecoderLayer":
        mem = int(rng.integers(1, 4))
        shapes.append((batch, mem, d) if batch_first else (mem, batch, d))
    return f"T.nn.{kind}({args})", shapes, ""


def _mha(rng):
    heads = _pick(rng, 1, 2)
    e = heads * int(rng.integers(1, 3))
    kdim, vdim = _pick(rng, None, 3), _pick(rng, None, 2)
    batch_first = bool(rng.random() < 0.5)
    args = (f"{e}, {heads}, dropout=0.0, bias={bool(rng.random() < 0.8)}, "
            f"add_bias_kv={bool(rng.random() < 0.3)}, add_zero_attn={bool(rng.random() < 0.3)}, "
            f"kdim={kdim!r}, vdim={vdim!r}, batch_first={batch_first}")
    lq, lk, b = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 3))

    def sh(length, dim):
        return (b, length, dim) if batch_first else (length, b, dim)

    shapes = [sh(lq, e), sh(lk, kdim or e), sh(lk, vdim or e)]
    call = (f"m(xs[0], xs[1], xs[2], need_weights={bool(rng.random() < 0.7)}, "
            f"average_attn_weights={bool(rng.random() < 0.5)})")
    return f"T.nn.MultiheadAttention({args})", shapes, call


def _embedding(rng):
    n, d = int(rng.integers(2, 7)), int(rng.integers(1, 4))
    pad = _pick(rng, None, 0, -1, n - 1)
    ids = rng.integers(0, n, size=(int(rng.integers(1, 3)), int(rng.integers(1, 5))))
    if rng.random() < 0.5:
        ids[0, 0] = ids.flat[-1]  # a repeated index
    args = f"{n}, {d}, padding_idx={pad!r}, scale_grad_by_freq={bool(rng.random() < 0.3)}"
    if rng.random() < 0.3:
        args += f", max_norm={_pick(rng, 0.5, 1.0)!r}, norm_type={_pick(rng, 1.0, 2.0)!r}"
    return f"T.nn.Embedding({args})", [("ids", ids.tolist())], ""


def _embedding_bag(rng):
    n, d = int(rng.integers(2, 7)), int(rng.integers(1, 4))
    mode = _pick(rng, "sum", "mean", "max")
    args = (f"{n}, {d}, mode={mode!r}, padding_idx={_pick(rng, None, 0, 1)!r}, "
            f"include_last_offset={bool(rng.random() < 0.3)}")
    if rng.random() < 0.2:
        args += ", max_norm=1.0"
    ids = rng.integers(0, n, size=(int(rng.integers(1, 3)), int(rng.integers(1, 4))))
    return f"T.nn.EmbeddingBag({args})", [("ids", ids.tolist())], ""


def _linear(rng):
    if rng.random() < 0.5:
        i, o = int(rng.integers(0, 4)), int(rng.integers(1, 4))
        shape = _spatial(rng, int(rng.integers(0, 3)), 1, 3) + (i,)
        return f"T.nn.Linear({i}, {o}, bias={bool(rng.random() < 0.7)})", [shape], ""
    a, b, o = (int(v) for v in rng.integers(1, 4, size=3))
    n = int(rng.integers(1, 3))
    return (f"T.nn.Bilinear({a}, {b}, {o}, bias={bool(rng.random() < 0.7)})",
            [(n, a), (n, b)], "")


def _upsample(rng):
    nd = int(rng.integers(1, 4))
    mode = _pick(rng, "nearest", "nearest-exact", "linear", "bilinear", "bicubic",
                 "trilinear")
    if rng.random() < 0.5:
        spec = f"size={_tup(rng, nd, 1, 7)!r}"
    else:
        spec = f"scale_factor={_pick(rng, 2, 0.5, 1.5, (2.0, 1.0, 3.0)[:nd])!r}"
    args = f"{spec}, mode={mode!r}"
    if mode in ("linear", "bilinear", "bicubic", "trilinear") and rng.random() < 0.5:
        args += f", align_corners={bool(rng.random() < 0.5)}"
    shape = (1, 2) + _spatial(rng, nd, 1, 5)
    return f"T.nn.Upsample({args})", [shape], ""


def _pad(rng):
    nd = int(rng.integers(1, 4))
    kind = _pick(rng, "Reflection", "Replication", "Constant", "Zero", "Circular")
    pad = _tup(rng, 2 * nd, 0, 3)
    args = repr(pad) + (f", {_pick(rng, 0.5, -2.0)!r}" if kind == "Constant" else "")
    shape = (1, 2) + _spatial(rng, nd, 2, 5)
    if rng.random() < 0.3:
        shape = shape[1:]
    return f"T.nn.{kind}Pad{nd}d({args})", [shape], ""


def _reshaping(rng):
    r = int(rng.integers(5))
    if r == 0:
        f = int(rng.integers(1, 4))
        return f"T.nn.PixelShuffle({f})", [(1, 2 * f * f, 2, 3)], ""
    if r == 1:
        f = int(rng.integers(1, 3))
        return f"T.nn.PixelUnshuffle({f})", [(1, 2, 2 * f, 4 * f)], ""
    if r == 2:
        k, s = _tup(rng, 2, 1, 3), _tup(rng, 2, 1, 3)
        return (f"T.nn.Unfold({k!r}, dilation={_tup(rng, 2, 1, 3)!r}, "
                f"padding={_tup(rng, 2, 0, 2)!r}, stride={s!r})", [(1, 2, 5, 4)], "")
    if r == 3:
        return (f"T.nn.Flatten({int(rng.integers(-3, 3))}, {int(rng.integers(-3, 3))})",
                [(2, 3, 1, 2)], "")
    return f"T.nn.ChannelShuffle({_pick(rng, 1, 2, 3)})", [(1, 6, 2, 2)], ""


_BUILDERS = (
    [lambda rng, nd=nd: _conv(rng, nd) for nd in (1, 2, 3)]
    + [lambda rng, nd=nd: _conv_t(rng, nd) for nd in (1, 2, 3)]
    + [lambda rng, nd=nd: _max_pool(rng, nd) for nd in (1, 2, 3)]
    + [lambda rng, nd=nd: _avg_pool(rng, nd) for nd in (1, 2, 3)]
    + [lambda rng, nd=nd: _lp_pool(rng, nd) for nd in (1, 2)]
    + [lambda rng, nd=nd: _adaptive(rng, nd) for nd in (1, 2, 3)]
    + [lambda rng, nd=nd: _batch_norm(rng, nd) for nd in (1, 2, 3)]
    + [lambda rng, nd=nd: _instance_norm(rng, nd) for nd in (1, 2, 3)]
    + [_layer_norm, _rms_norm, _group_norm, _local_response, _rnn, _rnn, _cell, _transformer,
       _transformer, _mha, _mha, _embedding, _embedding_bag, _linear, _upsample, _pad,
       _reshaping]
)


def modules(rng):
    """One ``torch.nn`` module from a random constructor call, run forward and backward."""
    ctor, shapes, call = _BUILDERS[int(rng.integers(len(_BUILDERS)))](rng)
    dtype = "float64" if rng.random() < 0.85 else "float32"
    lines = [_PROLOGUE, f"m = {ctor}", f"m = m.to(T.{dtype})", "fill(m)"]
    if rng.random() < 0.3:
        lines.append("m.eval()")
    xs = []
    for s in shapes:
        if s and s[0] == "ids":
            xs.append(f"T.tensor({s[1]!r})")
        else:
            xs.append(f"data({s!r}, T.{dtype})")
    lines.append(f"xs = [{', '.join(xs)}]")
    lines.append(f"y = {call or 'm(*xs)'}")
    lines.append("out = finish(m, y, xs)")
    return "\n".join(lines)
