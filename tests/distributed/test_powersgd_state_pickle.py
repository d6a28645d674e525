"""A pickled PowerSGDState: saved without its process group (which cannot be pickled) and
loaded into the default group, as PyTorch's is (ValueError before ``init_process_group``)."""

import logging
import pickle

import pytest

import ember.distributed as dist
from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook
from ember.distributed.distributed_c10d import _get_default_group
from tests.distributed.conftest import free_port


def test_state_pickles_without_group_and_loads_into_default(caplog):
    state = powerSGD_hook.PowerSGDState(None, matrix_approximation_rank=2,
                                        start_powerSGD_iter=3, random_seed=7)
    with caplog.at_level(logging.WARNING):
        blob = pickle.dumps(state)
    assert "not serializable" in caplog.text
    with pytest.raises(ValueError, match="init_process_group"):
        pickle.loads(blob)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    try:
        loaded = pickle.loads(blob)
        assert loaded.process_group is _get_default_group()
        assert (loaded.matrix_approximation_rank, loaded.start_powerSGD_iter) == (2, 3)
        assert loaded.iter == state.iter and "process_group" not in state.__getstate__()
    finally:
        dist.destroy_process_group()
