"""Session 23 (lead): small parity fixes found by running user idioms under both frameworks."""

from collections import OrderedDict, namedtuple

import pytest

import ember
from ember.utils import _pytree

torch = pytest.importorskip("torch")
from torch.utils import _pytree as torch_pytree  # noqa: E402

_P = namedtuple("_P", "x y")
TREES = [[1, 2], (1, [2, 3]), {"a": 1}, {"a": [1, (2, 3)], "b": 1}, [[1], [2]],
         [(1, 2), (3, 4), [5]], 1, [], {"x": {"y": {"z": 1}}}, _P(1, [2, 3]),
         OrderedDict(a=1, b=(2, 3)), [None, 1]]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_treespec_prints_as_torch(tree):
    ours = _pytree.tree_flatten(tree)[1]
    theirs = torch_pytree.tree_flatten(tree)[1]
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs)


def test_namedtuple_spec_is_torch_kind_and_round_trips():
    spec = _pytree.tree_flatten(_P(1, [2, 3]))[1]
    assert spec.type is namedtuple and spec.context is _P
    back = _pytree.tree_unflatten([4, 5, 6], spec)
    assert type(back) is _P and back == _P(4, [5, 6])
    assert _pytree.tree_map(lambda v: v * 2, _P(ember.ones(1), 3)).y == 6
