"""ember.export: graphs captured through the dispatcher, run, printed, saved and loaded,
compared with the eager module (and with torch.export's signature where it helps)."""

import io

import pytest

import ember
from ember import nn


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.bn = nn.BatchNorm1d(2)

    def forward(self, x):
        return ember.relu(self.bn(self.fc(x))) + 1, x.sum()


class _CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(4, 5)

    def forward(self, x):
        h = self.pool(ember.relu(self.conv(x)))
        return self.head(h.view(h.size(0), -1))


def _close(a, b):
    assert ember.allclose(a, b, atol=1e-6), (a, b)


def test_export_signature_matches_torch():
    torch = pytest.importorskip("torch")

    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 2)
            self.bn = torch.nn.BatchNorm1d(2)

        def forward(self, x):
            return torch.relu(self.bn(self.fc(x))) + 1, x.sum()

    ours = ember.export.export(_Net().eval(), (ember.randn(4, 3),)).graph_signature
    theirs = torch.export.export(TNet().eval(), (torch.randn(4, 3),)).graph_signature
    assert ours.parameters == theirs.parameters
    assert ours.buffers == theirs.buffers
    assert ours.user_inputs == theirs.user_inputs
    assert [s.arg.name for s in ours.input_specs] == [s.arg.name for s in theirs.input_specs]
    assert [s.kind.name for s in ours.input_specs] == [s.kind.name for s in theirs.input_specs]
    assert len(ours.user_outputs) == len(theirs.user_outputs)


def test_export_module_matches_eager():
    net = _Net().eval()
    x = ember.randn(4, 3)
    out = ember.export.export(net, (x,)).module()(x)
    ref = net(x)
    assert isinstance(out, tuple) and len(out) == 2
    _close(out[0], ref[0])
    _close(out[1], ref[1])


def test_export_cnn_module_matches_eager():
    net = _CNN().eval()
    x = ember.randn(2, 3, 6, 6)
    _close(ember.export.export(net, (x,)).module()(x), net(x))


def test_export_print_names_ops_and_signature():
    text = str(ember.export.export(_Net().eval(), (ember.randn(4, 3),)))
    assert text.startswith("ExportedProgram:\n    class GraphModule(torch.nn.Module):")
    assert 'x: "f32[4, 3]"' in text
    assert 'linear: "f32[4, 2]" = torch.ops.aten.linear.default(x, p_fc_weight, p_fc_bias)' \
        in text
    assert "p_fc_weight: PARAMETER target='fc.weight'" in text
    assert "b_bn_running_mean: BUFFER target='bn.running_mean' persistent=True" in text
    assert "Range constraints: {}" in text


def test_export_static_guard_fails_like_torch():
    ep = ember.export.export(_Net().eval(), (ember.randn(4, 3),))
    with pytest.raises(AssertionError, match=r"Guard failed: x.size\(\)\[1\] == 3"):
        ep.module()(ember.randn(4, 5))


def test_export_dynamic_batch_recaptures():
    net = _CNN().eval()
    batch = ember.export.Dim("batch", min=1, max=16)
    ep = ember.export.export(net, (ember.randn(2, 3, 6, 6),), dynamic_shapes={"x": {0: batch}})
    assert ep.range_constraints == {"batch": (1, 16)}
    x = ember.randn(5, 3, 6, 6)
    _close(ep.module()(x), net(x))
    with pytest.raises(AssertionError, match="Guard failed"):
        ep.module()(ember.randn(17, 3, 6, 6))


def test_export_dim_range_must_contain_example():
    with pytest.raises(ValueError, match="does not contain"):
        ember.export.export(_CNN(), (ember.randn(2, 3, 6, 6),),
                            dynamic_shapes={"x": {0: ember.export.Dim("b", min=3)}})


def test_export_calling_program_directly_raises_as_torch():
    ep = ember.export.export(nn.ReLU(), (ember.randn(2),))
    with pytest.raises(RuntimeError, match="exported_program.module"):
        ep(ember.randn(2))


def test_export_args_must_be_tuple():
    with pytest.raises(ValueError, match="tuple"):
        ember.export.export(nn.ReLU(), ember.randn(2))


def test_export_save_load_round_trip():
    net = _CNN().eval()
    x = ember.randn(2, 3, 6, 6)
    buf = io.BytesIO()
    ember.export.save(ember.export.export(net, (x,)), buf, extra_files={"note": "v1"})
    buf.seek(0)
    extra = {"note": ""}
    ep = ember.export.load(buf, extra_files=extra)
    assert extra == {"note": "v1"}
    _close(ep.module()(x), net(x))


def test_export_lifts_tensor_constants():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = ember.tensor([2.0, 3.0])  # a plain attribute, not a buffer

        def forward(self, x):
            return x * self.scale

    ep = ember.export.export(M(), (ember.ones(2),))
    assert ep.graph_signature.lifted_tensor_constants == ("lifted_tensor_0",)
    _close(ep.module()(ember.ones(2)), ember.tensor([2.0, 3.0]))


def test_export_state_dict_and_parameters():
    net = _Net()
    ep = ember.export.export(net.eval(), (ember.randn(4, 3),))
    assert list(ep.state_dict) == list(net.state_dict())
    assert [k for k, _ in ep.named_parameters()] == ["fc.weight", "fc.bias", "bn.weight",
                                                     "bn.bias"]
    assert ep.run_decompositions().graph_signature.parameters == ep.graph_signature.parameters


def test_onnx_export_accepts_exported_program_module():
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    net = _CNN().eval()
    x = ember.randn(1, 3, 6, 6)
    prog = ember.onnx.export(ember.export.export(net, (x,)).module(), (x,))
    assert isinstance(prog.model_proto, onnx.ModelProto)
    _close(prog(x)[0], net(x))


def test_onnx_export_accepts_exported_program():
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    net = _CNN().eval()
    x = ember.randn(1, 3, 6, 6)
    prog = ember.onnx.export(ember.export.export(net, (x,)))
    _close(prog(x)[0], net(x))
