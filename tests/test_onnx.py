"""ember.onnx: importable, not exporting (ONNX export needs graph capture)."""

import pytest

import ember


def test_onnx_is_in_onnx_export_false():
    assert ember.onnx.is_in_onnx_export() is False


def test_onnx_export_raises_not_implemented(tmp_path):
    with pytest.raises(NotImplementedError, match="ONNX export"):
        ember.onnx.export(ember.nn.Linear(1, 1), (ember.ones(1),), str(tmp_path / "m.onnx"))


def test_onnx_select_model_mode_restores():
    net = ember.nn.Dropout()
    with ember.onnx.select_model_mode_for_export(net, ember.onnx.TrainingMode.EVAL):
        assert net.training is False
    assert net.training is True
