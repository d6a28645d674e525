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


def _sharded(ember, seed):
    from ember.distributed.fsdp import fully_shard

    model = _model(ember, seed)
    for layer in model:
        fully_shard(layer)
    return fully_shard(model)


def state_dicts_two_ranks(rank, init_method, path):
    """get/set_state_dict on a fully_shard model and Adam over 2 ranks: whole (gathered)
    state dicts, a sharded checkpoint reloaded into another sharded model, and whole
    tensors set into a sharded model."""
    import ember
    import ember.distributed as dist
    import ember.distributed.checkpoint as dcp
    from ember.distributed.checkpoint import state_dict as dsd

    def arrays(sd):
        return {k: v.numpy().copy() for k, v in sd.items()}

    def exp_avgs(osd):
        return {k: v["exp_avg"].numpy().copy() for k, v in osd["state"].items()}

    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    full = dsd.StateDictOptions(full_state_dict=True)
    model = _sharded(ember, 0)
    opt = ember.optim.Adam(model.parameters(), lr=0.1)
    model(ember.full((4, 3), float(rank + 1))).sum().backward()
    opt.step()
    out = {"full_model": arrays(dsd.get_model_state_dict(model, options=full)),
           "full_optim": exp_avgs(dsd.get_optimizer_state_dict(model, opt, options=full))}
    msd, osd = dsd.get_state_dict(model, opt)
    dcp.save({"model": msd, "optim": osd}, checkpoint_id=os.path.join(path, "sharded"))

    other = _sharded(ember, 1)
    other_opt = ember.optim.Adam(other.parameters(), lr=0.5)
    msd2, osd2 = dsd.get_state_dict(other, other_opt)
    dcp.load({"model": msd2, "optim": osd2}, checkpoint_id=os.path.join(path, "sharded"))
    dsd.set_state_dict(other, other_opt, model_state_dict=msd2, optim_state_dict=osd2)
    out["reloaded_model"] = arrays(dsd.get_model_state_dict(other, options=full))
    out["reloaded_optim"] = exp_avgs(dsd.get_optimizer_state_dict(other, other_opt,
                                                                  options=full))

    third = _sharded(ember, 2)
    whole = {k: ember.tensor(v) for k, v in out["full_model"].items()}
    dsd.set_model_state_dict(third, whole, options=full)
    out["from_full"] = arrays(dsd.get_model_state_dict(third, options=full))

    # as the FSDP2 example checkpoints: whole state on rank 0 only, then broadcast from it
    offload = dsd.StateDictOptions(full_state_dict=True, cpu_offload=True)
    kept = dsd.get_model_state_dict(model, options=offload)
    out["offloaded_keys"] = sorted(kept)
    fourth = _sharded(ember, 3)
    dsd.set_model_state_dict(fourth, kept, options=dsd.StateDictOptions(
        full_state_dict=True, broadcast_from_rank0=True))
    out["from_rank0"] = arrays(dsd.get_model_state_dict(fourth, options=full))
    with open(os.path.join(path, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(out, f)
    dist.destroy_process_group()
