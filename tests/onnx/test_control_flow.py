"""ONNX export and control flow: ``cond`` on an input-dependent predicate is written as an
``If`` that onnxruntime runs for either branch; a Python ``if`` on such a value raises with
``dynamo=True`` and warns with ``dynamo=False``, as PyTorch's two exporters do (NOTE [ ONNX
export ] in ember/onnx/_exporter.py)."""

import io
import warnings

import pytest

import ember
import ember.nn as nn

pytest.importorskip("onnx")


class CondNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        y = x * 2
        return ember.cond(y.sum() > 0, lambda t: self.lin(t).sin(), lambda t: t, (y,)) + y


class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x.sin()
        return x.cos()


def test_cond_is_written_as_if():
    proto = ember.onnx.export(CondNet(), (ember.ones(3),)).model_proto
    assert "If" in [n.op_type for n in proto.graph.node]


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_runs_either_branch_in_onnxruntime(sign):
    pytest.importorskip("onnxruntime")
    net = CondNet()
    program = ember.onnx.export(net, (ember.ones(3),))
    x = sign * ember.ones(3)
    (got,) = program(x)
    assert ember.allclose(got, net(x).detach(), atol=1e-6)


def test_python_branch_on_input_raises_with_dynamo():
    with pytest.raises(ember.onnx.OnnxExporterError, match="torch.cond"):
        ember.onnx.export(Branchy(), (ember.ones(3),))


def test_python_branch_on_input_warns_without_dynamo():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.onnx.export(Branchy(), (ember.ones(3),), io.BytesIO(), dynamo=False)
    assert [w.category for w in caught] == [ember.jit.TracerWarning]
