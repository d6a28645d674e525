"""Norm layers refuse parameters and statistics of the wrong size in PyTorch's words and
order (batch norm: running_mean, running_var, weight, bias; group norm: the vector check,
before dtypes and sizes)."""

import pytest

import ember

torch = pytest.importorskip("torch")

_CASES = [
    lambda fw: fw.nn.functional.batch_norm(fw.ones(2, 4, 3), fw.zeros(3), fw.ones(3),
                                           training=True),
    lambda fw: fw.nn.functional.batch_norm(fw.ones(2, 4, 3), None, None, fw.ones(3),
                                           fw.ones(3), training=True),
    lambda fw: fw.nn.functional.batch_norm(fw.ones(2, 4, 3), None, None, fw.ones(4),
                                           fw.ones(3), training=True),
    lambda fw: fw.nn.functional.batch_norm(fw.ones(2, 4, 3), fw.zeros(4), fw.ones(3),
                                           training=True),
    lambda fw: fw.nn.BatchNorm1d(3)(fw.ones(2, 4, 3)),
    lambda fw: fw.nn.BatchNorm2d(3).eval()(fw.ones(2, 4, 3, 3)),
    lambda fw: fw.nn.functional.group_norm(fw.ones(2, 4, 3), 2, fw.ones(3), fw.ones(4)),
    lambda fw: fw.nn.functional.group_norm(fw.ones(2, 4, 3), 2, fw.ones(4), fw.ones(3)),
    lambda fw: fw.nn.functional.group_norm(fw.ones(2, 4, 3), 2, None, fw.ones(3)),
    lambda fw: fw.nn.functional.group_norm(fw.ones(2, 4, 3), 2, fw.ones(2, 2)),
    lambda fw: fw.nn.GroupNorm(2, 6)(fw.ones(2, 4, 3)),
    lambda fw: fw.native_group_norm(fw.ones(2, 4, 3), fw.ones(3, dtype=fw.float64), None,
                                    2, 4, 3, 2, 1e-5),
]


def _error(fw, case):
    with pytest.raises(Exception) as info:
        case(fw)
    return type(info.value).__name__, str(info.value)


@pytest.mark.parametrize("case", range(len(_CASES)))
def test_wrong_sizes_refused_as_torch(case):
    assert _error(ember, _CASES[case]) == _error(torch, _CASES[case])
