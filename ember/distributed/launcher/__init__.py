"""``ember.distributed.launcher``: starting worker groups from Python
(``torch.distributed.launcher``); see :mod:`ember.distributed.launcher.api`."""

from .api import LaunchConfig, elastic_launch, launch_agent  # noqa: F401

__all__ = ["LaunchConfig", "elastic_launch", "launch_agent"]
