"""Workers for tests/distributed/test_checkpoint.py (run in spawned processes)."""

import datetime
import os
import pickle


def _model(ember, seed):
    ember.manual_seed(seed)
    return ember.nn.Sequential(ember.nn.Linear(3, 5), ember.nn.Linear(5, 2))


def save_two_ranks(rank, init_method, path):
    """Save a plain state dict (shared and per-rank entries) and a fully_shard model from 2
    ranks, then load the model checkpoint into a differently initialised sharded model."""
    import ember
    import ember.distributed as dist
    import ember.distributed.checkpoint as dcp
    from ember.distributed.fsdp import full_state_dict, fully_shard

    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    sd = {"shared": ember.arange(4.0), f"rank{rank}": ember.full((2,), float(rank)),
          "step": 3}
    dcp.save(sd, checkpoint_id=os.path.join(path, "plain"))
    model = fully_shard(_model(ember, 0))
    dcp.save({"model": model.state_dict()}, checkpoint_id=os.path.join(path, "fsdp"))
    full = {k: v.numpy().copy() for k, v in full_state_dict(model).items()}
    other = fully_shard(_model(ember, 1))
    target = {"model": other.state_dict()}
    dcp.load(target, checkpoint_id=os.path.join(path, "fsdp"))
    reloaded = {k: v.numpy().copy() for k, v in full_state_dict(other).items()}
    with open(os.path.join(path, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump((full, reloaded), f)
    dist.destroy_process_group()
