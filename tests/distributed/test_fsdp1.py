"""FSDP1 (``FullyShardedDataParallel``): 2-rank training equals single-process full-batch
training for each sharding strategy, with and without ``use_orig_params``; ``no_sync``
accumulation, ``clip_grad_norm_``, state dict and optimizer state dict round trips
(tests/distributed/_fsdp1_workers.py); names and policies against PyTorch 2.13 on a world of
one (no mpi4py needed)."""

import functools

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed.fsdp import (FullStateDictConfig, FullyShardedDataParallel as FSDP,
                                    MixedPrecision, ShardingStrategy, StateDictType)
from ember.distributed.fsdp import wrap as ewrap
from tests.distributed import _fsdp1_workers as W
from tests.distributed.conftest import free_port, needs_mpi, spawn2

# -- the single-process reference -----------------------------------------------------------------


def _reference(mode):
    """Plain ember training on the whole batch (the nosync runs: both ranks' micro-batch k
    at once, accumulated over k)."""
    net, _ = W.model(ember)
    opt = ember.optim.Adam(net.parameters(), lr=0.05)
    x, y = (ember.tensor(a) for a in W.data())
    clips = []
    for _ in range(W.STEPS):
        opt.zero_grad()
        if mode == "nosync":
            for k in range(2):
                r = W.micro_rows(0, k) + W.micro_rows(1, k)
                ((net(x[r]) - y[r]) ** 2).mean().backward()
        else:
            ((net(x) - y) ** 2).mean().backward()
        if mode == "clip":
            clips.append(float(ember.nn.utils.clip_grad_norm_(net.parameters(), 0.05)))
        opt.step()
    params = {n: p.detach().numpy().copy() for n, p in net.named_parameters()}
    exp_avg = {n: opt.state[p]["exp_avg"].numpy().copy() for n, p in net.named_parameters()}
    return params, exp_avg, clips


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return spawn2(tmp_path_factory.mktemp("fsdp1_train"), W.worker, "ember", "TRAIN")


@pytest.fixture(scope="module")
def accumulated(tmp_path_factory):
    return spawn2(tmp_path_factory.mktemp("fsdp1_acc"), W.worker, "ember", "ACCUMULATE")


def _close(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6, err_msg=k)


@needs_mpi
@pytest.mark.parametrize("config", W.TRAIN, ids=lambda c: f"{c[1]}-uop{int(c[0])}")
def test_fsdp1_two_ranks_train_as_one_process(trained, config):
    params, exp_avg, _ = _reference("train")
    _close(trained[0][config]["full"], params)
    assert trained[1][config]["full"] == {}  # FullStateDictConfig(rank0_only=True)
    _close(trained[0][config]["exp_avg"], exp_avg)


@needs_mpi
@pytest.mark.parametrize("config", W.TRAIN, ids=lambda c: f"{c[1]}-uop{int(c[0])}")
def test_fsdp1_sharded_state_and_optim_state_reload_takes_the_same_step(trained, config):
    assert trained[0][config]["reload"] < 1e-6 and trained[1][config]["reload"] < 1e-6


@needs_mpi
def test_fsdp1_names_on_two_ranks(trained):
    flat = trained[0][(False, "FULL_SHARD", "train")]
    assert flat["names"] == [
        "_fsdp_wrapped_module._flat_param",
        "_fsdp_wrapped_module.blocks.0._fsdp_wrapped_module._flat_param",
        "_fsdp_wrapped_module.blocks.1._fsdp_wrapped_module._flat_param"]
    orig = trained[0][(True, "FULL_SHARD", "train")]
    assert orig["names"][:3] == ["_fsdp_wrapped_module.inp.weight",
                                 "_fsdp_wrapped_module.inp.bias",
                                 "_fsdp_wrapped_module.blocks.0._fsdp_wrapped_module.l1.weight"]
    # a unit's flat parameter holds its own parameters first, in registration order (torch's)
    assert flat["group_params"][:5] == ["inp.weight", "inp.bias", "out.weight", "out.bias",
                                        "blocks.0.l1.weight"]


@needs_mpi
@pytest.mark.parametrize("config", [c for c in W.ACCUMULATE if c[2] == "nosync"],
                         ids=lambda c: f"{c[1]}-uop{int(c[0])}")
def test_fsdp1_no_sync_accumulates_as_the_whole_batch(accumulated, config):
    params, _, _ = _reference("nosync")
    _close(accumulated[0][config]["full"], params)


@needs_mpi
def test_fully_shard_gradient_sync_off_accumulates_as_the_whole_batch(accumulated):
    # FSDP2 shares the reduction (NOTE [ FSDP1 on fully_shard's gathers ])
    _close(accumulated[0]["fsdp2_nosync"], _reference("nosync")[0])


@needs_mpi
@pytest.mark.parametrize("config", [c for c in W.ACCUMULATE if c[2] == "clip"],
                         ids=lambda c: f"{c[1]}-uop{int(c[0])}")
def test_fsdp1_clip_grad_norm_is_the_global_norm(accumulated, config):
    params, _, clips = _reference("clip")
    for r in range(2):
        np.testing.assert_allclose(accumulated[r][config]["clips"], clips, rtol=1e-5)
    _close(accumulated[0][config]["full"], params)


# -- a world of one -------------------------------------------------------------------------------

# what PyTorch 2.13 (gloo, world size 1, device_id=cpu) reports for W.model wrapped with
# ModuleWrapPolicy({Block}): one rank makes it NO_SHARD
_TORCH_FLAT_SHAPES = [("_fsdp_wrapped_module._flat_param", (26,)),
                      ("_fsdp_wrapped_module.blocks.0._fsdp_wrapped_module._flat_param", (67,)),
                      ("_fsdp_wrapped_module.blocks.1._fsdp_wrapped_module._flat_param", (67,))]


@pytest.fixture
def world1():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


def _wrapped(uop=False, **kw):
    net, block = W.model(ember)
    return FSDP(net, auto_wrap_policy=ewrap.ModuleWrapPolicy({block}), use_orig_params=uop, **kw)


def test_fsdp1_needs_a_process_group():
    with pytest.raises(ValueError, match="init_process_group"):
        FSDP(ember.nn.Linear(2, 2))


def test_fsdp1_flat_param_names_and_shapes_as_torch(world1):
    m = _wrapped()
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == _TORCH_FLAT_SHAPES
    assert m.sharding_strategy is ShardingStrategy.NO_SHARD
    assert [type(u).__name__ for u in FSDP.fsdp_modules(m)] == ["FullyShardedDataParallel"] * 3
    assert len(FSDP.fsdp_modules(m, root_only=True)) == 1
    assert m.module is m._fsdp_wrapped_module and type(m.module).__name__ == "Net"
    assert "(_fsdp_wrapped_module): Net(" in repr(m)


def test_fsdp1_state_dict_forms_use_torch_keys(world1):
    m = _wrapped()
    names = [n for n, _ in W.model(ember)[0].named_parameters()]
    assert list(m.state_dict()) == names
    with FSDP.state_dict_type(m, StateDictType.LOCAL_STATE_DICT):
        assert list(m.state_dict()) == ["_flat_param", "blocks.0._flat_param",
                                        "blocks.1._flat_param"]
    with FSDP.state_dict_type(m, StateDictType.SHARDED_STATE_DICT):
        sd = m.state_dict()
        assert list(sd) == names and type(sd["inp.weight"]).__name__ == "DTensor"
    with FSDP.summon_full_params(m):
        assert [n for n, _ in m.named_parameters()] == names
    assert FSDP.get_state_dict_type(m).state_dict_type is StateDictType.FULL_STATE_DICT


def test_fsdp1_orig_params_keep_names_and_shapes(world1):
    m = _wrapped(uop=True)
    net, _ = W.model(ember)
    expect = [(n.replace("blocks.0.", "blocks.0._fsdp_wrapped_module.")
               .replace("blocks.1.", "blocks.1._fsdp_wrapped_module."), tuple(p.shape))
              for n, p in net.named_parameters()]
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == \
        [("_fsdp_wrapped_module." + n, s) for n, s in expect]


@pytest.mark.parametrize("uop", [False, True])
def test_fsdp1_summon_writeback_and_apply_reach_the_shards(world1, uop):
    m = _wrapped(uop=uop)

    def zero_bias(mod):
        if isinstance(mod, ember.nn.Linear):
            with ember.no_grad():
                mod.bias.zero_()

    m.apply(zero_bias)
    with FSDP.summon_full_params(m):
        with ember.no_grad():
            m.module.out.weight.fill_(2.0)
    sd = m.state_dict()
    assert all(float(sd[k].abs().sum()) == 0 for k in sd if k.endswith("bias"))
    assert float(sd["out.weight"].min()) == 2.0 == float(sd["out.weight"].max())


def test_fsdp1_full_state_dict_load_round_trip(world1):
    m, src = _wrapped(), _wrapped()
    with ember.no_grad():
        src(ember.ones(1, 3))
    sd = {k: v + 1 for k, v in src.state_dict().items()}
    m.load_state_dict(sd)
    _close({k: v.numpy() for k, v in m.state_dict().items()},
           {k: v.numpy() for k, v in sd.items()})
    with pytest.raises(RuntimeError):
        m.load_state_dict({"nope": ember.zeros(1)})


def test_fsdp1_mixed_precision_runs_forward_in_param_dtype(world1):
    m = _wrapped(mixed_precision=MixedPrecision(param_dtype=ember.float64))
    out = m(ember.ones(2, 3))
    assert out.dtype == ember.float64
    out.sum().backward()
    assert all(p.grad.dtype == ember.float32 for p in m.parameters())


def test_fsdp1_world1_training_matches_torch(world1):
    torch = pytest.importorskip("torch")
    losses = {}
    for lib in (ember, torch):
        net, _ = W.model(lib)
        if lib is ember:
            net = _wrapped(uop=False)
        opt = lib.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        x, y = (lib.tensor(a) for a in W.data())
        seen = []
        for _ in range(3):
            opt.zero_grad()
            loss = ((net(x) - y) ** 2).mean()
            loss.backward()
            clip = net.clip_grad_norm_(0.5) if lib is ember else \
                torch.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
            opt.step()
            seen.append((float(loss.detach()), float(clip)))
        losses[lib.__name__] = seen
    np.testing.assert_allclose(losses["ember"], losses["torch"], rtol=1e-5)


def test_fsdp1_optim_state_dict_names_as_torch(world1):
    m = _wrapped(uop=True)
    opt = ember.optim.Adam(m.parameters())
    m(ember.ones(2, 3)).sum().backward()
    opt.step()
    osd = FSDP.optim_state_dict(m, opt)
    names = [n for n, _ in W.model(ember)[0].named_parameters()]
    assert osd["param_groups"][0]["params"] == names
    assert set(osd["state"]["inp.weight"]) == {"step", "exp_avg", "exp_avg_sq"}
    assert tuple(osd["state"]["inp.weight"]["exp_avg"].shape) == (4, 3)
    back = FSDP.optim_state_dict_to_load(m, opt, osd)
    assert back["param_groups"][0]["params"] == list(range(len(names)))


@pytest.mark.parametrize("uop", [False, True])
def test_fsdp1_full_optim_state_round_trip_takes_the_same_step(world1, uop):
    models, opts = [_wrapped(uop=uop), _wrapped(uop=uop)], []
    for m in models:
        opts.append(ember.optim.Adam(m.parameters(), lr=0.1))
    models[0](ember.ones(2, 3)).sum().backward()
    opts[0].step()
    full = FSDP.full_optim_state_dict(models[0], opts[0])
    models[1].load_state_dict(models[0].state_dict())
    opts[1].load_state_dict(FSDP.shard_full_optim_state_dict(full, models[1]))
    for m, o in zip(models, opts):
        o.zero_grad()
        m(ember.ones(2, 3)).sum().backward()
        o.step()
    _close({k: v.numpy() for k, v in models[0].state_dict().items()},
           {k: v.numpy() for k, v in models[1].state_dict().items()})


# -- wrap policies against PyTorch's --------------------------------------------------------------


def _policy_answers(wrap_mod, nn):
    lin, lst = nn.Linear(10, 10), nn.ModuleList([nn.Linear(2, 2)])
    mha = nn.MultiheadAttention(4, 2)
    size = functools.partial(wrap_mod.size_based_auto_wrap_policy, min_num_params=100)
    trans = functools.partial(wrap_mod.transformer_auto_wrap_policy,
                              transformer_layer_cls={nn.Linear})
    lam = functools.partial(wrap_mod.lambda_auto_wrap_policy,
                            lambda_fn=lambda m: isinstance(m, nn.ModuleList))
    mwp = wrap_mod.ModuleWrapPolicy({nn.Linear})
    out = []
    for pol in (size, trans, lam, wrap_mod.always_wrap_policy):
        for m in (lin, lst, mha):
            for recurse in (True, False):
                for numel in (10, 110):
                    out.append(bool(pol(module=m, recurse=recurse, nonwrapped_numel=numel)))
    out += [bool(mwp(m, False, 0)) for m in (lin, lst)]
    return out


def test_fsdp1_wrap_policies_answer_as_torch():
    torch = pytest.importorskip("torch")
    from torch.distributed.fsdp import wrap as twrap

    assert _policy_answers(ewrap, ember.nn) == _policy_answers(twrap, torch.nn)


def test_fsdp1_size_policy_wraps_big_blocks_only(world1):
    net, block = W.model(ember)
    m = FSDP(net, auto_wrap_policy=functools.partial(ewrap.size_based_auto_wrap_policy,
                                                     min_num_params=60))
    units = [n for n, u in m.named_modules() if isinstance(u, FSDP)]
    assert units == ["", "_fsdp_wrapped_module.blocks.0", "_fsdp_wrapped_module.blocks.1"]


def test_fsdp1_enable_wrap_and_full_config(world1):
    with ewrap.enable_wrap(use_orig_params=True):
        lin = ewrap.wrap(ember.nn.Linear(2, 2))
    assert isinstance(lin, FSDP) and lin.use_orig_params
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(lin, StateDictType.FULL_STATE_DICT, cfg):
        assert list(lin.state_dict()) == ["weight", "bias"]


@needs_mpi
def test_fsdp1_tutorial_script_under_the_launcher_trains_as_one_process(tmp_path):
    import os
    import pickle
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = os.path.join(os.path.dirname(__file__), "_fsdp1_script.py")
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = tmp_path / "state.pkl"
    proc = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node=2",
                           "--standalone", script, str(out)], env=env, cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out, "rb") as f:
        got = pickle.load(f)
    _close(got, _reference("train")[0])


def test_fsdp1_check_is_root_and_fsdp2_forward_method(world1):
    from ember.distributed.fsdp import fully_shard, register_fsdp_forward_method

    m = _wrapped()
    inner = FSDP.fsdp_modules(m)[1]
    assert m.check_is_root() and not inner.check_is_root()
    m(ember.ones(1, 3))
    assert m.check_is_root() and not inner.check_is_root()

    net = fully_shard(ember.nn.Linear(3, 2))
    net.double_out = lambda x: 2 * ember.nn.functional.linear(x, net.weight, net.bias)
    register_fsdp_forward_method(net, "double_out")
    out = net.double_out(ember.ones(1, 3))  # the whole weight, not its DTensor shard
    np.testing.assert_allclose(out.detach().numpy(), 2 * net(ember.ones(1, 3)).detach().numpy())
    assert type(net.weight).__name__ == "DTensor"  # resharded afterwards
