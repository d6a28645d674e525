"""Functions tests/distributed/test_launcher_api.py starts with elastic_launch (importable by
spawned workers)."""

import os


def train(offset):
    import ember
    import ember.distributed as dist

    dist.init_process_group("gloo")
    t = ember.tensor([float(os.environ["RANK"]) + offset])
    dist.all_reduce(t)
    out = (dist.get_rank(), dist.get_world_size(), t.item(), os.environ["LOCAL_RANK"])
    dist.destroy_process_group()
    return out


def environment():
    keys = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RESTART_COUNT")
    return {k: os.environ.get(k) for k in keys}


def fail_on_rank_one():
    if os.environ["RANK"] == "1":
        raise ValueError("worker one gives up")
    return "ok"
