"""What the session-33 sweep of public-style programs (``test_research_repos_12.py``) found
different from PyTorch, pinned in process.

Each test states what PyTorch 2.13 does (so it runs without PyTorch) and, where PyTorch is
installed, checks it does the same.
"""

import importlib

import pytest


def _frameworks():
    """ember, and PyTorch where installed."""
    names = ["ember"]
    if importlib.util.find_spec("torch") is not None:
        names.append("torch")
    return [importlib.import_module(n) for n in names]


# ---------------------------------------------------------------------------------------------
# state-dict hooks: a public post-hook edits in place and may not return a value; the older
# private registration may return a replacement; a load post-hook may not return a value
# (NOTE [ State-dict post-hooks edit in place ])


@pytest.mark.parametrize("fw", _frameworks(), ids=lambda fw: fw.__name__)
def test_public_state_dict_post_hook_returning_a_value_raises(fw):
    m = fw.nn.Sequential(fw.nn.Linear(2, 2))
    m[0].register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd.pop(prefix + "bias"))
    with pytest.raises(RuntimeError, match="^state_dict post-hook must return None$"):
        m.state_dict()


@pytest.mark.parametrize("fw", _frameworks(), ids=lambda fw: fw.__name__)
def test_public_state_dict_post_hook_edits_in_place(fw):
    m = fw.nn.Sequential(fw.nn.Linear(2, 2), fw.nn.Linear(2, 1))

    def drop_bias(module, state_dict, prefix, local_metadata):
        del state_dict[prefix + "bias"]

    m[0].register_state_dict_post_hook(drop_bias)
    assert list(m.state_dict()) == ["0.weight", "1.weight", "1.bias"]


@pytest.mark.parametrize("fw", _frameworks(), ids=lambda fw: fw.__name__)
def test_private_state_dict_hook_replaces_only_the_called_modules_result(fw):
    m = fw.nn.Sequential(fw.nn.Linear(2, 2))
    m._register_state_dict_hook(lambda mod, sd, prefix, meta: {"replaced": 1})
    m[0]._register_state_dict_hook(lambda mod, sd, prefix, meta: {"ignored": 2})
    assert m.state_dict() == {"replaced": 1}
    assert m[0].state_dict() == {"ignored": 2}


@pytest.mark.parametrize("fw", _frameworks(), ids=lambda fw: fw.__name__)
def test_load_state_dict_post_hook_returning_a_value_raises(fw):
    m = fw.nn.Linear(2, 2)
    m.register_load_state_dict_post_hook(lambda mod, keys: keys)
    with pytest.raises(AssertionError, match="not expected to return new values"):
        m.load_state_dict(m.state_dict())


# ---------------------------------------------------------------------------------------------
# ``_load_from_state_dict`` overridden with PyTorch's seven parameters, and ``assign`` passed
# in the metadata (NOTE [ Assignment travels in the checkpoint's metadata ]); it used to be
# called with an eighth argument, a TypeError in every such override


def _versioned_linear(fw, seen):
    class Upgraded(fw.nn.Linear):
        """An old checkpoint named the weight ``w``: renamed on load."""

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                  missing_keys, unexpected_keys, error_msgs):
            seen.append(dict(local_metadata))
            if prefix + "w" in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                          missing_keys, unexpected_keys, error_msgs)

    return Upgraded


@pytest.mark.parametrize("fw", _frameworks(), ids=lambda fw: fw.__name__)
def test_load_from_state_dict_override_with_torch_signature(fw):
    seen = []
    m = fw.nn.Sequential(_versioned_linear(fw, seen)(2, 3))
    old = {"0.w": fw.ones(3, 2), "0.bias": fw.zeros(3)}
    assert str(m.load_state_dict(old)) == "<All keys matched successfully>"
    assert m[0].weight.sum().item() == 6.0 and seen == [{}]


@pytest.mark.parametrize("fw", _frameworks(), ids=lambda fw: fw.__name__)
def test_assign_is_written_into_the_state_dicts_metadata(fw):
    seen = []
    src = fw.nn.Sequential(fw.nn.Linear(2, 3), fw.nn.BatchNorm1d(3))
    sd = src.state_dict()
    dst = fw.nn.Sequential(_versioned_linear(fw, seen)(2, 3), fw.nn.BatchNorm1d(3))
    dst.load_state_dict(sd, assign=True)
    assert seen == [{"version": 1, "assign_to_params_buffers": True}]
    assert dst[0].weight.data_ptr() == sd["0.weight"].data_ptr()
    assert dict(sd._metadata["1"]) == {"version": 2, "assign_to_params_buffers": True}
    # the entry stays: a later plain load of the same dict assigns as well
    again = fw.nn.Sequential(fw.nn.Linear(2, 3), fw.nn.BatchNorm1d(3))
    again.load_state_dict(sd)
    assert again[1].running_var.data_ptr() == sd["1.running_var"].data_ptr()
    # a dict without metadata, loaded plainly, copies
    copy = fw.nn.Sequential(fw.nn.Linear(2, 3), fw.nn.BatchNorm1d(3))
    copy.load_state_dict(dict(sd))
    assert copy[0].weight.data_ptr() != sd["0.weight"].data_ptr()


# ---------------------------------------------------------------------------------------------
# ``torch.hub._load_local``: the helper ``load(..., source="local")`` ends in, which programs
# call directly; it was missing


@pytest.mark.parametrize("fw", _frameworks(), ids=lambda fw: fw.__name__)
def test_hub_load_local_calls_the_entrypoint_with_the_folder_on_sys_path(fw, tmp_path):
    import sys

    (tmp_path / "helpers_for_hub_33.py").write_text("WIDTH = 3\n")
    (tmp_path / "hubconf.py").write_text(
        "dependencies = []\n"
        "from helpers_for_hub_33 import WIDTH\n"
        f"import {fw.__name__}\n"
        f"def net(classes=2):\n    return {fw.__name__}.nn.Linear(WIDTH, classes)\n")
    path_before = list(sys.path)
    try:
        model = fw.hub._load_local(str(tmp_path), "net", classes=4)
        assert (model.in_features, model.out_features) == (3, 4)
        assert sys.path == path_before
        with pytest.raises(RuntimeError, match="^Cannot find callable missing in hubconf$"):
            fw.hub._load_local(str(tmp_path), "missing")
    finally:
        sys.modules.pop("hubconf", None)
        sys.modules.pop("helpers_for_hub_33", None)


# ---------------------------------------------------------------------------------------------
# NAdam's per-parameter state in PyTorch's key order (a program listing the state, or
# printing a state dict, saw ``mu_product`` last)


@pytest.mark.parametrize("fw", _frameworks(), ids=lambda fw: fw.__name__)
def test_nadam_state_keys_in_torch_order(fw):
    lin = fw.nn.Linear(3, 2)
    opt = fw.optim.NAdam(lin.parameters(), lr=0.1)
    lin(fw.ones(2, 3)).sum().backward()
    opt.step()
    assert list(opt.state[lin.weight]) == ["step", "mu_product", "exp_avg", "exp_avg_sq"]
    assert list(opt.state_dict()["state"][0]) == ["step", "mu_product", "exp_avg", "exp_avg_sq"]


# ---------------------------------------------------------------------------------------------
# OneCycleLR's state dict lists its entries in PyTorch's order (a printed state dict showed
# ``_anneal_func_type`` before ``_schedule_phases``)


@pytest.mark.parametrize("fw", _frameworks(), ids=lambda fw: fw.__name__)
def test_one_cycle_state_dict_keys_in_torch_order(fw):
    opt = fw.optim.SGD(fw.nn.Linear(2, 2).parameters(), lr=0.1, momentum=0.9)
    sched = fw.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=10)
    assert list(sched.state_dict()) == [
        "total_steps", "_schedule_phases", "_anneal_func_type", "cycle_momentum", "use_beta1",
        "base_lrs", "last_epoch", "_step_count", "_is_initial", "_get_lr_called_within_step",
        "_last_lr"]
