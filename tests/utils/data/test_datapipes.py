"""ember.utils.data.datapipes: functional chaining, graph settings, DataLoader sharding."""

import pytest

from ember.utils import data as D
from ember.utils.data.datapipes.iter import IterableWrapper
from ember.utils.data.datapipes.map import SequenceWrapper
from ember.utils.data.graph import traverse_dps
from ember.utils.data.graph_settings import (
    apply_sharding, apply_shuffle_settings, get_all_graph_pipes,
)


def test_iter_pipe_chains_map_filter_batch():
    dp = IterableWrapper(range(6)).map(lambda x: x + 1).filter(lambda x: x % 2 == 0).batch(2)
    assert list(dp) == [[2, 4], [6]] and isinstance(list(dp)[0], D.DataChunk)


def test_unbatch_inverts_batch():
    assert list(IterableWrapper(range(5)).batch(2).unbatch()) == [0, 1, 2, 3, 4]


def test_shuffle_disabled_keeps_order():
    dp = apply_shuffle_settings(IterableWrapper(range(5)).shuffle(), shuffle=False)
    assert list(dp) == [0, 1, 2, 3, 4]


def test_shuffle_is_a_permutation():
    assert sorted(IterableWrapper(range(50)).shuffle(buffer_size=7)) == list(range(50))


def test_sharding_filter_splits_stream():
    dp = apply_sharding(IterableWrapper(range(7)).sharding_filter(), 2, 1)
    assert list(dp) == [1, 3, 5]


def test_graph_lists_all_pipes():
    dp = IterableWrapper([1]).map(str).zip(IterableWrapper([2]))
    assert len(get_all_graph_pipes(traverse_dps(dp))) == 4


def test_map_pipe_indexes():
    dp = SequenceWrapper([1, 2, 3]).map(lambda x: 10 * x).batch(2)
    assert dp[1] == [30] and len(dp) == 2


def test_functional_datapipe_registers_method():
    @D.functional_datapipe("negate_for_test")
    class Negate(D.IterDataPipe):
        def __init__(self, dp):
            self.dp = dp

        def __iter__(self):
            return (-x for x in self.dp)

    assert list(IterableWrapper([1, 2]).negate_for_test()) == [-1, -2]


def test_functional_datapipe_name_taken_raises():
    with pytest.raises(Exception, match="already taken"):
        D.functional_datapipe("map")(type("Again", (D.IterDataPipe,), {}))


def test_non_deterministic_refused_under_guarantee():
    @D.non_deterministic
    class Racy(D.IterDataPipe):
        def __iter__(self):
            yield 1

    with D.guaranteed_datapipes_determinism(), pytest.raises(TypeError,
                                                             match="non-deterministic"):
        Racy()
    assert list(Racy()) == [1]


def test_dataloader_shuffle_false_turns_pipe_shuffle_off():
    loader = D.DataLoader(IterableWrapper(range(6)).shuffle(), batch_size=3, shuffle=False)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5]]


def test_dataloader_workers_shard_pipe():
    dp = IterableWrapper(range(8)).sharding_filter()
    loader = D.DataLoader(dp, batch_size=None, num_workers=2)
    assert sorted(int(x) for x in loader) == list(range(8))
