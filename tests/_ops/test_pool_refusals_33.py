"""Adaptive average pooling's backward and fractional max pooling refuse as PyTorch does."""

import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.adaptive_avg_pool2d(
        m.ones(2, 3, 4, 4, requires_grad=True), (0, 2)).sum().backward(),
    lambda m: m.nn.functional.adaptive_avg_pool2d(
        m.ones(2, 3, 4, 4, requires_grad=True), (2, 0)).sum().backward(),
    lambda m: m.nn.functional.adaptive_avg_pool3d(
        m.ones(2, 3, 4, 4, 4, requires_grad=True), (0, 2, 2)).sum().backward(),
    lambda m: m.nn.functional.adaptive_avg_pool1d(
        m.ones(2, 3, 4, requires_grad=True), 0).sum().backward(),
    lambda m: m.nn.functional.fractional_max_pool3d(m.ones(1, 2, 5, 5, 5), 2,
                                                    output_size=(3, 4, 4)),
    lambda m: m.nn.functional.fractional_max_pool3d(m.ones(1, 1, 5, 6, 7), (2, 3, 4),
                                                    output_size=(3, 3, 4)),
    lambda m: m.nn.functional.fractional_max_pool3d(m.ones(1, 5, 6, 7), 1,
                                                    output_size=(5, 6, 7)),
    lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 1, 5, 5), 2,
                                                    output_size=(5, 5)),
    lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 5, 6), 2, output_size=(4, 6)),
])
def test_refusals_match_torch(call):
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as ours:
        call(ember)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.fractional_max_pool3d(
        m.ones(1, 1, 5, 6, 7), 2, output_size=(3, 4, 3)).shape,
    lambda m: m.nn.functional.fractional_max_pool2d(
        m.ones(1, 1, 5, 5), 2, output_size=(4, 4)).shape,
    lambda m: m.nn.functional.adaptive_avg_pool2d(
        m.ones(0, 3, 4, 4, requires_grad=True), (2, 2)).sum().backward(),
])
def test_edges_accepted_as_torch(call):
    assert call(ember) == call(torch) or call(torch) is None
