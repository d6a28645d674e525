"""ember.utils.{hooks, model_zoo, dlpack, weak, swap_tensors, module_tracker} and the
checkpoint extras (GraphExecGroup, LoggingTensorMode, capture_logs), against torch."""

import gc
import warnings
import weakref
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember.utils import dlpack, hooks, model_zoo, module_tracker, weak
from ember.utils.checkpoint import GraphExecGroup, LoggingTensorMode, capture_logs, checkpoint

torch = pytest.importorskip("torch")


# --- hooks --------------------------------------------------------------------------------------


def test_removable_handle_is_the_module_hook_handle():
    h = ember.nn.Linear(1, 1).register_forward_hook(lambda *a: None)
    assert isinstance(h, hooks.RemovableHandle)


def test_removable_handle_removes_from_its_dict():
    d = OrderedDict()  # weakly referenceable, as the handle requires (torch's too)
    h = hooks.RemovableHandle(d)
    d[h.id] = "hook"
    with h:
        assert h.id in d
    assert d == OrderedDict()


def test_warn_if_has_hooks_warns_for_plain_hook_only():
    x = ember.ones(2, requires_grad=True)
    x.register_hook(hooks.unserializable_hook(lambda g: g))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hooks.warn_if_has_hooks(x)  # only the marked hook: silent
    x.register_hook(lambda g: g)
    with pytest.warns(UserWarning, match="will not be serialized"):
        hooks.warn_if_has_hooks(x)


def test_warn_if_has_hooks_sees_non_leaf_hooks():
    y = ember.ones(2, requires_grad=True) * 2
    y.register_hook(lambda g: g)
    with pytest.warns(UserWarning, match="unserializable_hook"):
        hooks.warn_if_has_hooks(y)


# --- model_zoo ----------------------------------------------------------------------------------


def test_model_zoo_load_url_loads_and_caches(tmp_path):
    ember.save({"w": ember.arange(3.0)}, str(tmp_path / "net.pth"))
    sd = model_zoo.load_url((tmp_path / "net.pth").as_uri(), model_dir=str(tmp_path / "c"),
                            progress=False)
    assert sd["w"].tolist() == [0.0, 1.0, 2.0] and (tmp_path / "c" / "net.pth").exists()
    assert model_zoo.load_url is ember.hub.load_state_dict_from_url


# --- dlpack -------------------------------------------------------------------------------------


def test_dlpack_round_trip_through_capsule_shares_memory():
    t = ember.arange(4.0)
    back = dlpack.from_dlpack(dlpack.to_dlpack(t))
    t[0] = 9.0
    assert back.tolist() == [9.0, 1.0, 2.0, 3.0]


def test_dlpack_from_torch_and_numpy_equal_values():
    assert dlpack.from_dlpack(torch.arange(3)).tolist() == [0, 1, 2]
    a = np.arange(3.0)
    assert dlpack.from_dlpack(a).dtype == ember.float64
    assert torch.utils.dlpack.from_dlpack(dlpack.to_dlpack(ember.ones(2))).tolist() == [1, 1]


def test_dlpack_from_dlpack_copy_does_not_share():
    a = np.zeros(2)
    t = dlpack.from_dlpack(a, copy=True)
    a[0] = 5
    assert t.tolist() == [0.0, 0.0]


def test_dlpack_rejects_other_objects():
    with pytest.raises(TypeError):
        dlpack.from_dlpack([1, 2])
    assert int(dlpack.DLDeviceType.kDLCUDA) == int(torch.utils.dlpack.DLDeviceType.kDLCUDA)


# --- weak ---------------------------------------------------------------------------------------


def test_weak_id_key_dictionary_keys_by_identity():
    d = weak.WeakIdKeyDictionary()
    a, b = ember.zeros(2), ember.zeros(2)  # equal values, different objects
    d[a], d[b] = "a", "b"
    assert (len(d), d[a], d[b]) == (2, "a", "b")
    assert ember.zeros(2) not in d and a in d


def test_weak_id_key_dictionary_drops_dead_keys():
    d = weak.WeakTensorKeyDictionary()
    a = ember.ones(1)
    d[a] = 1
    del a
    gc.collect()
    assert len(d) == 0 and list(d.items()) == []


def test_weak_id_key_dictionary_mapping_methods():
    a, b = ember.ones(1), ember.ones(1)
    d = weak.WeakIdKeyDictionary({a: 1})
    assert d.setdefault(b, 2) == 2 and d.get(a) == 1 and d.pop(a) == 1
    assert [k is b for k in d] == [True] and d.values() == [2]
    with pytest.raises(KeyError):
        d[a]


def test_weak_id_ref_equality_like_torch():
    for lib in (ember, torch):
        w = weak if lib is ember else torch.utils.weak
        t = lib.ones(1)
        r1, r2 = w.WeakIdRef(t), w.WeakIdRef(t)
        assert r1 == r2 and hash(r1) == id(t) and r1() is t


# --- swap_tensors -------------------------------------------------------------------------------


def test_swap_tensors_exchanges_contents_like_torch():
    results = []
    for lib in (ember, torch):
        a, b = lib.ones(2, requires_grad=True), lib.zeros(3, dtype=lib.int64)
        a.note = "a"
        lib.utils.swap_tensors(a, b)
        results.append((a.tolist(), b.tolist(), a.requires_grad, b.requires_grad,
                        str(a.dtype).split(".")[1], b.note, hasattr(a, "note")))
    assert results[0] == results[1]


def test_swap_tensors_swaps_parameter_class():
    p, t = ember.nn.Parameter(ember.ones(1)), ember.zeros(1)
    ember.utils.swap_tensors(p, t)
    assert type(p) is ember.Tensor and type(t) is ember.nn.Parameter


def test_swap_tensors_refuses_weakly_referenced():
    a = ember.ones(1)
    r = weakref.ref(a)  # noqa: F841
    with pytest.raises(RuntimeError, match="Cannot swap t1 because it has weakref"):
        ember.utils.swap_tensors(a, ember.ones(1))


def test_swap_tensors_poisons_old_accumulator():
    y = ember.ones(1, requires_grad=True)
    z = (y * 2).sum()
    ember.utils.swap_tensors(y, ember.ones(1))
    with pytest.raises(RuntimeError, match="poisoned by swap_tensors"):
        z.backward()


# --- module_tracker -----------------------------------------------------------------------------


def _trace(lib, tracker_cls):
    seen = []

    class Inner(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)

        def forward(self, x):
            seen.append(("fw", sorted(tracker.parents), tracker.is_bw))
            return self.lin(x)

    model = lib.nn.Sequential(Inner(), lib.nn.ReLU())

    def hook(g):
        seen.append(("bw", sorted(tracker.parents), tracker.is_bw))

    tracker = tracker_cls()
    with tracker:
        x = lib.ones(1, 2, requires_grad=True)
        y = model(x)
        seen.append(("after fw", sorted(tracker.parents), tracker.is_bw))
        y.register_hook(hook)
        model[0].lin.weight.register_hook(hook)
        y.sum().backward()
        seen.append(("after bw", sorted(tracker.parents), tracker.is_bw))
    return seen


def test_module_tracker_parents_equal_torch():
    from torch.utils.module_tracker import ModuleTracker as TorchTracker

    assert _trace(ember, module_tracker.ModuleTracker) == _trace(torch, TorchTracker)


# --- checkpoint extras --------------------------------------------------------------------------


def test_graph_exec_group_recomputes_once_for_two_backwards():
    calls = []

    def block(t):
        calls.append(1)
        return t.sin(), t.cos()

    x = ember.ones(2, requires_grad=True)
    a, b = checkpoint(block, x, use_reentrant=False)
    with GraphExecGroup():
        (ga,) = ember.autograd.grad(a.sum(), x, retain_graph=True)
        (gb,) = ember.autograd.grad(b.sum(), x)
    assert len(calls) == 2  # the forward and one recomputation
    np.testing.assert_allclose(ga.numpy(), np.cos(1.0) * np.ones(2), rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), -np.sin(1.0) * np.ones(2), rtol=1e-6)


def test_graph_exec_group_does_not_nest():
    with GraphExecGroup(), pytest.raises(RuntimeError, match="cannot be nested"):
        with GraphExecGroup():
            pass
    assert GraphExecGroup._get_current_group() is None


def test_capture_logs_mode_lines_match_torch_for_simple_ops():
    x = ember.ones(2)
    with capture_logs(is_mode=True) as logs, LoggingTensorMode():
        (x * 2).sin()
    # what torch.utils.checkpoint's LoggingTensorMode logs for the same code (torch 2.13)
    assert logs == ["$1: f32[2] = torch._ops.aten.mul.Tensor($0, 2)",
                    "$2: f32[2] = torch._ops.aten.sin.default($1)"]


def test_capture_logs_without_mode_prints_tensors():
    x = ember.ones(2)
    with capture_logs() as logs, LoggingTensorMode():
        x + 1
    assert logs == ["tensor([2., 2.]) = torch._ops.aten.add.Tensor(tensor([1., 1.]), 1)"]


def test_every_hook_returns_the_one_removable_handle_class():
    from ember.utils.hooks import RemovableHandle

    x = ember.ones(2, requires_grad=True)
    m = ember.nn.Linear(2, 2)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    handles = [x.register_hook(lambda g: g), m.register_forward_hook(lambda *a: None),
               opt.register_step_pre_hook(lambda *a: None)]
    assert all(type(h) is RemovableHandle for h in handles)
    for h in handles:
        h.remove()
    assert not m._forward_hooks and not opt._optimizer_step_pre_hooks
