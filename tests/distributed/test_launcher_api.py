"""``distributed.launcher.api``: starting worker groups from Python (elastic_launch)."""

import pytest

from ember.distributed.elastic.multiprocessing.errors import ChildFailedError
from ember.distributed.launcher.api import LaunchConfig, elastic_launch, launch_agent

from . import _launcher_workers as w
from .conftest import needs_mpi


def test_environment_of_each_worker():
    out = elastic_launch(LaunchConfig(1, 1, 2, max_restarts=0), w.environment)()
    assert out == {r: {"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2",
                       "LOCAL_WORLD_SIZE": "2", "TORCHELASTIC_RESTART_COUNT": "0"}
                   for r in range(2)}


@needs_mpi
def test_workers_form_a_group_and_return_values():
    out = elastic_launch(LaunchConfig(1, 1, 2, max_restarts=0), w.train)(10.0)
    assert out == {0: (0, 2, 21.0, "0"), 1: (1, 2, 21.0, "1")}


def test_failure_restarts_then_names_the_rank():
    with pytest.raises(ChildFailedError, match="worker one gives up") as info:
        launch_agent(LaunchConfig(1, 1, 2, max_restarts=1), w.fail_on_rank_one, [])
    assert list(info.value.failures) == [1]


def test_program_entrypoint_and_bad_config():
    assert launch_agent(LaunchConfig(1, 1, 2, max_restarts=0), "true", []) == {0: None, 1: None}
    with pytest.raises(ChildFailedError):
        launch_agent(LaunchConfig(1, 1, 1, max_restarts=0), "false", [])
    with pytest.raises(ValueError):
        LaunchConfig(2, 1, 1)
    with pytest.raises(ValueError):
        launch_agent(LaunchConfig(1, 2, 1), w.environment, [])
