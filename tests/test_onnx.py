"""ember.onnx.export: models traced through the dispatcher, written as ONNX and run on
onnxruntime, compared with ember's own outputs (and with torch's exporter where it helps)."""

import io

import numpy as np
import pytest

import ember
from ember import nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _run(proto, *arrays):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    sess = ort.InferenceSession(proto.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])
    feed = {i.name: a for i, a in zip(sess.get_inputs(), arrays)}
    return sess.run(None, feed)


def _check(model, *args, rtol=1e-4, atol=1e-5, **options):
    """Export ``model`` and compare onnxruntime's outputs with ember's; returns the proto."""
    model.eval()
    prog = ember.onnx.export(model, args, **options)
    with ember.no_grad():
        ref = model(*args)
    refs = [t for t in _flat(ref)]
    got = _run(prog.model_proto, *[a.numpy() for a in args])
    assert len(got) == len(refs)
    for g, r in zip(got, refs):
        assert g.shape == tuple(r.shape)
        np.testing.assert_allclose(g, r.numpy(), rtol=rtol, atol=atol)
    return prog.model_proto


def _flat(x):
    if isinstance(x, ember.Tensor):
        return [x]
    return [t for item in x for t in _flat(item)]


def _ops(proto):
    return [n.op_type for n in proto.graph.node]


class _CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, groups=2, bias=False)
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = self.pool(ember.relu(self.bn(self.conv(x))))
        x = self.avg(ember.nn.functional.silu(self.conv2(x)))
        return ember.log_softmax(self.fc(x.view(x.size(0), -1)), dim=1)


class _TinyGPT(nn.Module):
    def __init__(self, vocab=11, dim=16, heads=2, block=6):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(block, dim)
        self.ln = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * dim, dim))
        self.head = nn.Linear(dim, vocab, bias=False)
        self.heads = heads

    def forward(self, idx):
        b, t = idx.shape
        x = self.tok(idx) + self.pos(ember.arange(t))
        q, k, v = self.qkv(self.ln(x)).split(x.size(-1), dim=2)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, -1))
        x = x + self.mlp(self.ln(x))
        return self.head(x)


def test_export_mlp_matches_torch_node_types(tmp_path):
    torch = pytest.importorskip("torch")
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    proto = _check(net, ember.randn(3, 4), input_names=["x"], output_names=["y"])
    tnet = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    f = tmp_path / "t.onnx"
    torch.onnx.export(tnet, (torch.randn(3, 4),), str(f), input_names=["x"], output_names=["y"],
                      dynamo=False)
    tproto = onnx.load(str(f))
    assert _ops(proto) == _ops(tproto)
    assert [i.name for i in proto.graph.initializer] == [i.name for i in tproto.graph.initializer]
    assert [o.name for o in proto.graph.output] == ["y"]
    assert [i.name for i in proto.graph.input] == ["x"]


def test_export_cnn_matches_ember():
    proto = _check(_CNN(), ember.randn(2, 3, 8, 8))
    assert "Conv" in _ops(proto) and "BatchNormalization" in _ops(proto)


def test_export_gpt_matches_ember():
    proto = _check(_TinyGPT(), ember.randint(0, 11, (2, 6)))
    assert "Gelu" in _ops(proto) and "Softmax" in _ops(proto)


def test_export_transformer_encoder_layer_matches_ember():
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    _check(layer, ember.randn(2, 5, 8))


def test_export_lstm_matches_ember():
    _check(nn.LSTM(4, 6, batch_first=True), ember.randn(2, 5, 4))


def test_export_gru_matches_ember():
    _check(nn.GRU(3, 4), ember.randn(5, 2, 3))


def test_export_dynamic_axes_runs_other_batch_sizes():
    net = _CNN().eval()
    prog = ember.onnx.export(net, (ember.randn(2, 3, 8, 8),), input_names=["x"],
                             output_names=["y"], dynamic_axes={"x": {0: "batch"},
                                                               "y": {0: "batch"}})
    dim = prog.model_proto.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim.dim_param == "batch"
    x = ember.randn(5, 3, 8, 8)
    (got,) = _run(prog.model_proto, x.numpy())
    with ember.no_grad():
        np.testing.assert_allclose(got, net(x).numpy(), rtol=1e-4, atol=1e-5)


def test_export_dynamic_shapes_gpt_other_batch():
    net = _TinyGPT().eval()
    prog = ember.onnx.export(net, (ember.randint(0, 11, (2, 6)),),
                             dynamic_shapes={"idx": {0: "batch"}})
    x = ember.randint(0, 11, (3, 6))
    (got,) = _run(prog.model_proto, x.numpy())
    with ember.no_grad():
        np.testing.assert_allclose(got, net(x).numpy(), rtol=1e-4, atol=1e-5)


def test_export_writes_file_and_file_object(tmp_path):
    net = nn.Linear(3, 2)
    path = tmp_path / "m.onnx"
    assert ember.onnx.export(net, (ember.randn(1, 3),), str(path), dynamo=False) is None
    assert onnx.load(str(path)).graph.node[0].op_type == "Gemm"
    buf = io.BytesIO()
    ember.onnx.export(net, (ember.randn(1, 3),), buf)
    assert onnx.load_from_string(buf.getvalue()).graph.node[0].op_type == "Gemm"


def test_onnx_program_call_runs_onnxruntime():
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
    x = ember.randn(2, 3)
    prog = ember.onnx.export(net, (x,))
    (out,) = prog(x)
    assert isinstance(out, ember.Tensor)
    with ember.no_grad():
        np.testing.assert_allclose(out.numpy(), net(x).numpy(), rtol=1e-5, atol=1e-6)


def test_export_folds_constants_into_initializers():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.randn(4))

        def forward(self, x):
            return x * (self.w * 2 + ember.arange(4.0))

    proto = _check(M(), ember.randn(3, 4))
    assert _ops(proto) == ["Mul"]


def test_export_params_false_makes_weights_inputs():
    proto = ember.onnx.export(nn.Linear(3, 2), (ember.randn(1, 3),),
                              export_params=False).model_proto
    assert not proto.graph.initializer
    assert {i.name for i in proto.graph.input} == {"input", "weight", "bias"}


def test_export_lower_opset_converts():
    proto = _check(_CNN(), ember.randn(1, 3, 8, 8), opset_version=13)
    assert proto.opset_import[0].version == 13


def test_export_training_mode_preserve_keeps_dropout_off_in_eval():
    net = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    net.train()
    ember.onnx.export(net, (ember.randn(2, 3),))
    assert net.training  # the model's mode comes back


def test_export_unsupported_op_raises_exporter_error():
    class M(nn.Module):
        def forward(self, x):
            return x[x > 0]

    with pytest.raises(ember.onnx.OnnxExporterError, match="boolean mask"):
        ember.onnx.export(M(), (ember.randn(4),))


def test_is_in_onnx_export_true_while_tracing():
    seen = []

    class M(nn.Module):
        def forward(self, x):
            seen.append(ember.onnx.is_in_onnx_export())
            return x + 1

    ember.onnx.export(M(), (ember.randn(2),))
    assert seen == [True] and not ember.onnx.is_in_onnx_export()


def test_register_custom_op_symbolic_replaces_translation():
    def relu_as_clip(g, x):
        return g.op("Clip", x, np.asarray(0.0, np.float32))

    ember.onnx.register_custom_op_symbolic("aten::relu", relu_as_clip, 9)
    try:
        proto = _check(nn.Sequential(nn.Linear(3, 3), nn.ReLU()), ember.randn(2, 3))
    finally:
        ember.onnx.unregister_custom_op_symbolic("aten::relu", 9)
    assert _ops(proto) == ["Gemm", "Clip"]


def test_export_verify_passes():
    ember.onnx.export(_CNN(), (ember.randn(1, 3, 8, 8),), verify=True)


def test_export_keyword_inputs_become_graph_inputs():
    class M(nn.Module):
        def forward(self, x, scale=None):
            return x * scale

    proto = _check_kw(M())
    assert [i.name for i in proto.graph.input] == ["x", "scale"]


def _check_kw(model):
    x, s = ember.randn(2, 3), ember.randn(2, 3)
    prog = ember.onnx.export(model, (x,), kwargs={"scale": s})
    (got,) = _run(prog.model_proto, x.numpy(), s.numpy())
    np.testing.assert_allclose(got, (x * s).numpy(), rtol=1e-6)
    return prog.model_proto


@pytest.mark.parametrize("make", [
    lambda x: x[:, 1:3, ::2],
    lambda x: x[..., 0],
    lambda x: x[:, None, 1],
    lambda x: x.permute(0, 2, 1).flatten(1),
    lambda x: ember.cat([x, x * 2], dim=1).chunk(2, dim=2)[1],
    lambda x: ember.stack([x, x], dim=0).sum(0),
    lambda x: x.mean(dim=(1, 2), keepdim=True) - x.amax(-1, keepdim=True),
    lambda x: x.var(1) + x.std(1, keepdim=True).squeeze(1),
    lambda x: ember.nn.functional.pad(x, (1, 2)),
    lambda x: x.masked_fill(ember.ones(4, 5, dtype=ember.bool).tril(), float("-inf")),
    lambda x: ember.where(x > 0, x, x * 0.1).clamp(-0.5, 0.5),
    lambda x: x.max(dim=1).values + x.argmax(dim=1).float(),
    lambda x: ember.nn.functional.normalize(x, dim=-1),
    lambda x: x.expand(2, 2, 4, 5).reshape(4, 4, 5)[:, 0],
    lambda x: x.cumsum(1) / 3 + x.pow(2).sqrt() - x.abs().log1p(),
    lambda x: ember.nn.functional.softmax(x, dim=1) @ x.transpose(1, 2),
    lambda x: x.to(ember.float64).sum(-1),
    lambda x: ember.nn.functional.layer_norm(x, (5,)),
    lambda x: x.repeat(1, 2, 1) + 1,
], ids=range(19))
def test_export_ops_match_ember(make):
    class M(nn.Module):
        def forward(self, x):
            return make(x)

    _check(M(), ember.randn(2, 4, 5))


def test_jit_scalar_type_matches_torch():
    torch = pytest.importorskip("torch")
    for name in ("FLOAT", "INT64", "BOOL", "HALF", "BFLOAT16", "DOUBLE"):
        assert int(ember.onnx.JitScalarType[name]) == int(torch.onnx.JitScalarType[name])
        assert int(ember.onnx.JitScalarType[name].onnx_type()) == \
            int(torch.onnx.JitScalarType[name].onnx_type())
    assert ember.onnx.JitScalarType.from_dtype(ember.float32).dtype() is ember.float32


def test_tensor_proto_data_type_matches_onnx():
    for member in ember.onnx.TensorProtoDataType:
        assert int(member) == getattr(onnx.TensorProto, member.name.replace("E4M3", "E4M3")
                                      if member.name != "UNDEFINED" else "UNDEFINED")


def test_onnx_select_model_mode_restores():
    net = nn.Dropout()
    with ember.onnx.select_model_mode_for_export(net, ember.onnx.TrainingMode.EVAL):
        assert not net.training
    assert net.training


class _SuperResolution(nn.Module):
    """The shape of PyTorch's super-resolution ONNX tutorial model."""

    def __init__(self, upscale=2):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 8, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(8, upscale ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale)

    def forward(self, x):
        return self.pixel_shuffle(self.conv2(self.relu(self.conv1(x))))


@pytest.mark.parametrize("opset", [10, 11, 13, 17, 20])
def test_export_super_resolution_each_opset(opset):
    proto = _check(_SuperResolution(), ember.randn(1, 1, 6, 6), opset_version=opset,
                   input_names=["input"], output_names=["output"],
                   dynamic_axes={"input": {0: "batch_size"}, "output": {0: "batch_size"}})
    assert proto.opset_import[0].version == opset


class _Residual(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)
        self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(c)

    def forward(self, x):
        out = self.b2(self.c2(self.relu(self.b1(self.c1(x)))))
        out += x
        return self.relu(out)


def test_export_residual_block_with_in_place_add():
    _check(_Residual(), ember.randn(2, 4, 6, 6), opset_version=11)


def test_export_interpolate_matches_ember():
    class M(nn.Module):
        def forward(self, x):
            up = nn.functional.interpolate(x, scale_factor=2, mode="nearest")
            return up + nn.functional.interpolate(x, size=(8, 8), mode="bilinear",
                                                  align_corners=False)

    _check(M(), ember.randn(1, 2, 4, 4))


def test_export_bidirectional_stacked_lstm_matches_ember():
    net = nn.Sequential(nn.Embedding(20, 8),
                        nn.LSTM(8, 6, num_layers=2, bidirectional=True, batch_first=True))
    _check(net, ember.randint(0, 20, (2, 5)))


def test_export_activations_at_opset_11():
    net = nn.Sequential(nn.Linear(4, 4), nn.Hardswish(), nn.Mish(), nn.LeakyReLU(0.1),
                        nn.ELU(), nn.GELU(), nn.Softplus(), nn.PReLU(), nn.Sigmoid())
    _check(net, ember.randn(3, 4), opset_version=11)


@pytest.mark.parametrize("opset", [11, 18])
def test_export_single_op_activations(opset):
    net = nn.Sequential(nn.Linear(4, 4), nn.Hardtanh(-0.5, 0.5), nn.Linear(4, 4), nn.ReLU6(),
                        nn.Linear(4, 4), nn.CELU(2.0), nn.SELU(), nn.LogSigmoid(),
                        nn.Softplus(2.0, 1.0), nn.Hardsigmoid(), nn.Hardswish(), nn.Mish(),
                        nn.ELU(0.5), nn.LeakyReLU(0.3))
    _check(net, ember.randn(3, 4) * 3, opset_version=opset)


def test_export_transformer_decoder_layer_matches_ember():
    _check(nn.TransformerDecoderLayer(8, 2, 16, batch_first=True), ember.randn(2, 3, 8),
           ember.randn(2, 4, 8))


def test_export_transposed_conv_and_group_norm():
    net = nn.Sequential(nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1),
                        nn.GroupNorm(2, 4), nn.Tanh(), nn.Upsample(scale_factor=2))
    _check(net, ember.randn(1, 3, 4, 4))


def _opinfo_samples():
    from ember.testing._opinfo import load_op_db

    out = []
    for info in load_op_db():
        if info.nondeterministic or ember.float32 not in info.dtypes:
            continue
        try:
            samples = list(info.sample_inputs(ember.float32, np.random.default_rng(0)))
        except Exception:  # noqa: BLE001 - an entry whose samples need more than float32
            continue
        sample = next((s for s in samples if isinstance(s.input, ember.Tensor)
                       and s.input.ndim > 0 and s.input.numel() > 0), None)
        if sample is not None:
            out.append((info, sample))
    return out


def test_export_opinfo_samples_match_ember_or_raise_exporter_error():
    """Differential sweep: every deterministic float32 OpInfo entry (first sample with a
    non-empty input) either exports and agrees with ember under onnxruntime, or raises
    OnnxExporterError; never a wrong answer or another exception."""
    ok, unsupported, bad = 0, 0, []
    for info, s in _opinfo_samples():
        fn = info.get_op()

        class M(nn.Module):
            def forward(self, x):
                return fn(x, *s.args, **s.kwargs)

        try:
            with ember.no_grad():
                ref = M()(s.input)
        except Exception:  # noqa: BLE001 - samples meant for other forms
            continue
        refs = [t for t in (_flat(ref) if isinstance(ref, (ember.Tensor, tuple, list))
                            else []) if isinstance(t, ember.Tensor)]
        if not refs:
            continue
        try:
            prog = ember.onnx.export(M(), (s.input,))
        except ember.onnx.OnnxExporterError:
            unsupported += 1
            continue
        except Exception as err:  # noqa: BLE001 - collected and reported below
            bad.append(f"{info.name}: {type(err).__name__}: {err}"[:200])
            continue
        try:
            got = _run(prog.model_proto, s.input.numpy())
        except Exception as err:  # noqa: BLE001
            bad.append(f"{info.name}: onnxruntime: {err}"[:200])
            continue
        if not all(g.shape == tuple(r.shape) and
                   np.allclose(g, r.numpy(), rtol=1e-3, atol=1e-4, equal_nan=True)
                   for g, r in zip(got, refs)):
            bad.append(f"{info.name}: values differ for {s!r}"[:200])
            continue
        ok += 1
    assert not bad, "\n".join(bad)
    assert ok >= 250, (ok, unsupported)


def test_utils_unconvertible_ops_lists_missing_translations():
    class M(nn.Module):
        def forward(self, x):
            return ember.lgamma(x).digamma() + 1

    assert ember.onnx.utils.unconvertible_ops(M(), (ember.rand(3),)) == \
        (None, ["lgamma", "digamma"])
    # the table is left as it was
    with pytest.raises(ember.onnx.OnnxExporterError, match="lgamma"):
        ember.onnx.export(M(), (ember.rand(3),))


def test_utils_export_is_export():
    assert ember.onnx.utils.export is ember.onnx.export
