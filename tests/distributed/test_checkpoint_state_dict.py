"""ember.distributed.checkpoint.state_dict (get_state_dict / set_state_dict and friends)
against torch.distributed.checkpoint.state_dict in the same process; DDP in a world of one,
fully_shard on 2 spawned ranks."""

import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint import state_dict as dsd
from tests.distributed import _checkpoint_workers
from tests.distributed.conftest import free_port, needs_mpi

torch = pytest.importorskip("torch")
tdist = pytest.importorskip("torch.distributed")
from torch.distributed.checkpoint import state_dict as tdsd  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


def _pair(trained=True, frozen=False, opt="Adam"):
    """The same model and optimizer in ember and torch, after one identical step."""
    out = []
    for fw in (ember, torch):
        fw.manual_seed(0)
        m = fw.nn.Sequential(fw.nn.Linear(2, 3), fw.nn.ReLU(), fw.nn.Linear(3, 1))
        out.append(m)
    with ember.no_grad():
        for pe, pt in zip(out[0].parameters(), out[1].parameters()):
            pe.copy_(ember.tensor(pt.detach().numpy()))
    pairs = []
    for fw, m in zip((ember, torch), out):
        if frozen:
            m[2].bias.requires_grad_(False)
        o = getattr(fw.optim, opt)(m.parameters(), lr=0.1)
        if trained:
            m(fw.ones(4, 2)).sum().backward()
            o.step()
        pairs.append((m, o))
    return pairs


def _np(tree):
    if isinstance(tree, dict):
        return {k: _np(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_np(v) for v in tree]
    if hasattr(tree, "detach"):
        return np.asarray(tree.detach().float().numpy()).tolist()
    return tree


def _close(a, b):
    """Same structure; numbers equal within float32 rounding (one Adam step may differ by
    an ulp between the frameworks)."""
    if isinstance(a, dict):
        return list(a) == list(b) and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return np.isclose(a, b, rtol=1e-6, atol=1e-7)
    return a == b


def _state_only(osd):
    return {"state": _np(osd["state"]), "params": [g["params"] for g in osd["param_groups"]]}


def test_model_state_dict_keys_match_torch():
    (me, oe), (mt, ot) = _pair(frozen=True)
    for opts in ({}, {"ignore_frozen_params": True}):
        assert (list(dsd.get_model_state_dict(me, options=dsd.StateDictOptions(**opts)))
                == list(tdsd.get_model_state_dict(mt, options=tdsd.StateDictOptions(**opts))))


def test_model_state_dict_of_submodule_without_prefix_matches_torch():
    (me, _), (mt, _) = _pair()
    e = dsd.get_model_state_dict(me, submodules={me[2]},
                                 options=dsd.StateDictOptions(keep_submodule_prefixes=False))
    t = tdsd.get_model_state_dict(mt, submodules={mt[2]},
                                  options=tdsd.StateDictOptions(keep_submodule_prefixes=False))
    assert _close(_np(e), _np(t)) and list(e) == ["weight", "bias"]


def test_optimizer_state_dict_keyed_by_names_matches_torch():
    (me, oe), (mt, ot) = _pair(frozen=True)
    e, t = dsd.get_optimizer_state_dict(me, oe), tdsd.get_optimizer_state_dict(mt, ot)
    assert _close(_state_only(e), _state_only(t))
    assert e["param_groups"][0]["lr"] == t["param_groups"][0]["lr"]


def test_optimizer_state_dict_of_fresh_optimizer_initialises_state_like_torch():
    (me, oe), (mt, ot) = _pair(trained=False)
    w = me[0].weight.detach().clone()
    e, t = dsd.get_optimizer_state_dict(me, oe), tdsd.get_optimizer_state_dict(mt, ot)
    assert _close(_state_only(e), _state_only(t))
    assert me[0].weight.equal(w) and me[0].weight.grad is None


def test_flattened_optimizer_state_dict_state_keys_match_torch():
    (me, oe), (mt, ot) = _pair(opt="SGD")
    opts = {"flatten_optimizer_state_dict": True}
    e = dsd.get_optimizer_state_dict(me, oe, options=dsd.StateDictOptions(**opts))
    t = tdsd.get_optimizer_state_dict(mt, ot, options=tdsd.StateDictOptions(**opts))
    assert [k for k in e if k.startswith("state.")] == [k for k in t if k.startswith("state.")]
    assert e["param_groups.0.weight.lr"] == t["param_groups.0.weight.lr"]


def test_flattened_optimizer_state_dict_loads_back():
    (me, oe), _ = _pair()
    flat = dsd.get_optimizer_state_dict(me, oe, options=dsd.StateDictOptions(
        flatten_optimizer_state_dict=True))
    flat["param_groups.0.weight.lr"] = 0.25
    (m2, o2), _ = _pair(trained=False)
    dsd.set_optimizer_state_dict(m2, o2, flat)
    assert o2.param_groups[0]["lr"] == 0.25
    assert o2.state[m2[0].weight]["exp_avg"].equal(oe.state[me[0].weight]["exp_avg"])


def test_set_optimizer_state_dict_with_fewer_groups_raises():
    (me, _), _ = _pair()
    opt = ember.optim.SGD([{"params": me[0].parameters(), "lr": 0.2},
                           {"params": me[2].parameters()}], lr=0.1)
    with pytest.raises(ValueError):
        dsd.set_optimizer_state_dict(me, opt, {"state": {}, "param_groups": [
            {"lr": 1.0, "params": ["9.weight"]}]})


def test_broadcast_from_rank0_needs_full_state_dict():
    (me, _), (mt, _) = _pair()
    for mod, m in ((dsd, me), (tdsd, mt)):
        with pytest.raises(ValueError, match="full_state_dict must be True"):
            mod.get_model_state_dict(m, options=mod.StateDictOptions(broadcast_from_rank0=True))


def test_set_model_state_dict_strict_missing_key_raises_like_torch():
    (me, _), (mt, _) = _pair()
    sd_e = {k: v for k, v in dsd.get_model_state_dict(me).items() if k != "0.bias"}
    sd_t = {k: v for k, v in tdsd.get_model_state_dict(mt).items() if k != "0.bias"}
    with pytest.raises(RuntimeError, match='Missing key.*"0.bias"'):
        dsd.set_model_state_dict(me, sd_e)
    r_e = dsd.set_model_state_dict(me, sd_e, options=dsd.StateDictOptions(strict=False))
    r_t = tdsd.set_model_state_dict(mt, sd_t, options=tdsd.StateDictOptions(strict=False))
    assert (r_e.missing_keys, r_e.unexpected_keys) == (r_t.missing_keys, r_t.unexpected_keys)


def test_compiled_model_state_dict_drops_orig_mod():
    (me, _), _ = _pair()
    compiled = ember.compile(me)
    assert list(dsd.get_model_state_dict(compiled)) == list(dsd.get_model_state_dict(me))


def test_state_dicts_round_trip_through_a_checkpoint(tmp_path):
    (me, oe), _ = _pair()
    msd, osd = dsd.get_state_dict(me, oe)
    dcp.save({"model": msd, "optim": osd}, checkpoint_id=tmp_path)
    (m2, o2), _ = _pair(trained=False)
    msd2, osd2 = dsd.get_state_dict(m2, o2)
    dcp.load({"model": msd2, "optim": osd2}, checkpoint_id=tmp_path)
    dsd.set_state_dict(m2, o2, model_state_dict=msd2, optim_state_dict=osd2)
    assert all(a.equal(b) for a, b in zip(m2.parameters(), me.parameters()))
    assert _state_only(dsd.get_optimizer_state_dict(m2, o2)) == _state_only(osd)


@pytest.fixture
def world_of_one():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


@needs_mpi
def test_ddp_model_and_optimizer_state_dicts_drop_module_prefix(world_of_one):
    (me, _), _ = _pair(trained=False)
    ddp = ember.nn.parallel.DistributedDataParallel(me)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    msd, osd = dsd.get_state_dict(ddp, opt)
    assert list(msd) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert osd["param_groups"][0]["params"] == list(msd)
    assert list(ddp.state_dict())[0] == "module.0.weight"
    assert dsd.set_model_state_dict(ddp, msd).missing_keys == []


@pytest.fixture(scope="module")
def fsdp_two_ranks(tmp_path_factory):
    import ember.multiprocessing as mp

    path = tmp_path_factory.mktemp("dsd")
    mp.spawn(_checkpoint_workers.state_dicts_two_ranks,
             args=(f"tcp://127.0.0.1:{free_port()}", str(path)), nprocs=2)
    results = []
    for r in range(2):
        with open(path / f"rank{r}.pkl", "rb") as f:
            results.append(pickle.load(f))
    return path, results


@needs_mpi
def test_fsdp_full_state_dicts_are_whole_and_equal_on_both_ranks(fsdp_two_ranks):
    r0, r1 = fsdp_two_ranks[1]
    assert r0["full_model"]["0.weight"].shape == (5, 3)
    assert r0["full_optim"]["0.weight"].shape == (5, 3)
    for key in ("full_model", "full_optim"):
        assert all(np.array_equal(r0[key][k], r1[key][k]) for k in r0[key])


@needs_mpi
def test_fsdp_sharded_checkpoint_reloads_through_set_state_dict(fsdp_two_ranks):
    for r in fsdp_two_ranks[1]:
        for key in ("model", "optim"):
            full, back = r[f"full_{key}"], r[f"reloaded_{key}"]
            assert all(np.array_equal(full[k], back[k]) for k in full), key


@needs_mpi
def test_fsdp_set_model_state_dict_takes_whole_tensors(fsdp_two_ranks):
    for r in fsdp_two_ranks[1]:
        assert all(np.array_equal(r["full_model"][k], r["from_full"][k])
                   for k in r["full_model"])


@needs_mpi
def test_fsdp_offloaded_full_state_dict_only_on_rank0_and_broadcast_back(fsdp_two_ranks):
    r0, r1 = fsdp_two_ranks[1]
    assert r0["offloaded_keys"] == sorted(r0["full_model"]) and r1["offloaded_keys"] == []
    for r in (r0, r1):
        assert all(np.array_equal(r["full_model"][k], r["from_rank0"][k])
                   for k in r["full_model"])


@needs_mpi
def test_fsdp_sharded_optimizer_checkpoint_loads_whole_in_one_process(fsdp_two_ranks):
    path, (r0, _) = fsdp_two_ranks
    model = _checkpoint_workers._model(ember, 5)
    opt = ember.optim.Adam(model.parameters(), lr=0.1)
    msd, osd = dsd.get_state_dict(model, opt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.load({"model": msd, "optim": osd}, checkpoint_id=path / "sharded")
    dsd.set_state_dict(model, opt, model_state_dict=msd, optim_state_dict=osd)
    assert np.array_equal(model[0].weight.detach().numpy(), r0["full_model"]["0.weight"])
    assert np.array_equal(opt.state[model[0].weight]["exp_avg"].numpy(),
                          r0["full_optim"]["0.weight"])
