"""nn.init / nn.utils / nn.grad / nn.attention / global module hooks added for issue 17,
against PyTorch."""

import numpy as np
import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


# -- nn.init -----------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("name,shape", [("eye", (3, 4)), ("dirac", (4, 2, 3, 3))])
def test_init_deprecated_spelling_warns_like_torch(name, shape):
    e, t = ember.empty(shape), torch.empty(shape)
    with pytest.warns(FutureWarning) as ours:
        assert getattr(ember.nn.init, name)(e) is e
    with pytest.warns(FutureWarning) as theirs:
        getattr(torch.nn.init, name)(t)
    assert str(ours[0].message) == str(theirs[0].message)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


# -- nn.utils ----------------------------------------------------------------------------------


@needs_torch
def test_skip_init_gives_module_shaped_like_torch():
    em = ember.nn.utils.skip_init(ember.nn.Linear, 3, 4, bias=False)
    tm = torch.nn.utils.skip_init(torch.nn.Linear, 3, 4, bias=False)
    assert repr(em) == repr(tm)
    assert em.weight.device.type == "cpu"
    assert tuple(em.weight.shape) == tuple(tm.weight.shape)


def test_skip_init_rejects_non_module():
    with pytest.raises(RuntimeError, match="Expected a Module"):
        ember.nn.utils.skip_init(int)


def test_skip_init_requires_device_argument():
    class NoDevice(ember.nn.Module):
        def __init__(self):
            super().__init__()

    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        ember.nn.utils.skip_init(NoDevice)


@needs_torch
@pytest.mark.parametrize("nd,fmt", [(2, "channels_last"), (3, "channels_last_3d")])
def test_convert_conv_weight_memory_format_matches_torch(nd, fmt):
    def build(mod):
        conv = getattr(mod.nn, f"Conv{nd}d")
        deconv = getattr(mod.nn, f"ConvTranspose{nd}d")
        return mod.nn.Sequential(conv(2, 3, 3), mod.nn.Sequential(deconv(3, 2, 3)))

    em, tm = build(ember), build(torch)
    fn = f"convert_conv{nd}d_weight_memory_format"
    assert getattr(ember.nn.utils, fn)(em, getattr(ember, fmt)) is em
    getattr(torch.nn.utils, fn)(tm, getattr(torch, fmt))
    for ep, tp in zip(em.parameters(), tm.parameters()):
        assert ep.stride() == tp.stride()
        assert isinstance(ep, ember.nn.Parameter)


# -- nn.grad -----------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("wrt", ["input", "weight"])
def test_conv_grad_matches_torch(nd, wrt):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4) + (7,) * nd).astype(np.float32)
    w = rng.standard_normal((6, 2) + (3,) * nd).astype(np.float32)
    kw = dict(stride=2, padding=1, dilation=1, groups=2)
    out = getattr(torch.nn.functional, f"conv{nd}d")(torch.from_numpy(x), torch.from_numpy(w),
                                                     **kw)
    go = rng.standard_normal(tuple(out.shape)).astype(np.float32)
    name = f"conv{nd}d_{wrt}"
    if wrt == "input":
        ours = getattr(ember.nn.grad, name)(x.shape, ember.from_numpy(w), ember.from_numpy(go),
                                            **kw)
        theirs = getattr(torch.nn.grad, name)(x.shape, torch.from_numpy(w),
                                              torch.from_numpy(go), **kw)
    else:
        ours = getattr(ember.nn.grad, name)(ember.from_numpy(x), w.shape, ember.from_numpy(go),
                                            **kw)
        theirs = getattr(torch.nn.grad, name)(torch.from_numpy(x), w.shape,
                                              torch.from_numpy(go), **kw)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=2e-5)


# -- nn.factory_kwargs, nn.modules.utils -------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("kwargs", [None, {"dtype": "d"}, {"device": "cpu", "dtype": "d"},
                                    {"factory_kwargs": {"dtype": "d"}, "device": "cpu"}])
def test_factory_kwargs_matches_torch(kwargs):
    assert ember.nn.factory_kwargs(kwargs) == torch.nn.factory_kwargs(kwargs)


@pytest.mark.parametrize("kwargs,message", [
    ({"bias": True}, "unexpected kwargs"),
    ({"dtype": 1, "factory_kwargs": {"dtype": 2}}, "dtype specified twice"),
])
def test_factory_kwargs_bad_input_raises_type_error(kwargs, message):
    with pytest.raises(TypeError, match=message):
        ember.nn.factory_kwargs(kwargs)


@needs_torch
def test_modules_utils_tuple_helpers_match_torch():
    from torch.nn.modules import utils as tu

    from ember.nn.modules import utils as eu

    for fn in ("_single", "_pair", "_triple", "_quadruple"):
        for value in (3, (1, 2), [4, 5, 6]):
            assert getattr(eu, fn)(value) == getattr(tu, fn)(value)
    assert eu._reverse_repeat_tuple((1, 2), 2) == tu._reverse_repeat_tuple((1, 2), 2)
    assert eu._list_with_default([2, None], (1, 3, 5, 6)) == tu._list_with_default(
        [2, None], (1, 3, 5, 6))


@needs_torch
def test_consume_prefix_in_state_dict_matches_torch():
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present as t_consume

    from ember.nn.modules.utils import consume_prefix_in_state_dict_if_present as e_consume

    def ddp_state(mod):
        net = mod.nn.Sequential(mod.nn.Linear(2, 2))
        wrapper = mod.nn.Module()
        wrapper.module = net
        return wrapper.state_dict()

    esd, tsd = ddp_state(ember), ddp_state(torch)
    e_consume(esd, "module.")
    t_consume(tsd, "module.")
    assert list(esd) == list(tsd)
    assert list(esd._metadata) == list(tsd._metadata)


# -- nn.attention ------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("chosen", [["MATH"], ["MATH", "FLASH_ATTENTION"], "EFFICIENT_ATTENTION"])
def test_sdpa_kernel_switches_match_torch(chosen):
    def state(mod):
        c = mod.backends.cuda
        return (c.flash_sdp_enabled(), c.mem_efficient_sdp_enabled(), c.math_sdp_enabled(),
                c.cudnn_sdp_enabled())

    results = []
    for mod in (ember, torch):
        backend = mod.nn.attention.SDPBackend
        arg = [getattr(backend, n) for n in chosen] if isinstance(chosen, list) else getattr(
            backend, chosen)
        before = state(mod)
        with mod.nn.attention.sdpa_kernel(arg):
            inside = state(mod)
        assert state(mod) == before
        results.append(inside)
    assert results[0] == results[1]


def test_sdpa_kernel_rejects_non_backend():
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
        with ember.nn.attention.sdpa_kernel("math"):
            pass


def test_sdpa_kernel_keeps_attention_result():
    q = ember.randn(1, 2, 4, 8)
    expected = ember.nn.functional.scaled_dot_product_attention(q, q, q)
    with ember.nn.attention.sdpa_kernel(ember.nn.attention.SDPBackend.MATH):
        got = ember.nn.functional.scaled_dot_product_attention(q, q, q)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


# -- global module hooks and set_submodule -----------------------------------------------------


def _hook_log(mod):
    log = []
    mm = mod.nn.modules.module
    handles = [
        mm.register_module_forward_pre_hook(lambda m, a: log.append(("pre", type(m).__name__))),
        mm.register_module_forward_hook(lambda m, a, o: log.append(("post", type(m).__name__))),
        mm.register_module_full_backward_pre_hook(
            lambda m, g: log.append(("bpre", type(m).__name__))),
        mm.register_module_full_backward_hook(
            lambda m, gi, go: log.append(("b", type(m).__name__))),
    ]
    try:
        net = mod.nn.Sequential(mod.nn.Linear(2, 2), mod.nn.Tanh())
        net[1].register_full_backward_hook(lambda m, gi, go: log.append(("own", "Tanh")))
        net(mod.ones(1, 2, requires_grad=True)).sum().backward()
    finally:
        for h in handles:
            h.remove()
    return log


@needs_torch
def test_global_module_hooks_run_in_torch_order():
    assert _hook_log(ember) == _hook_log(torch)


@needs_torch
def test_global_forward_hook_with_kwargs_matches_torch():
    outs = []
    for mod in (ember, torch):
        h = mod.nn.modules.module.register_module_forward_hook(
            lambda m, args, kwargs, out: out + len(kwargs), with_kwargs=True)
        try:
            outs.append(mod.nn.Identity()(mod.ones(1)).item())
        finally:
            h.remove()
    assert outs[0] == outs[1]


@needs_torch
def test_registration_hooks_see_and_replace_like_torch():
    logs = []
    for mod in (ember, torch):
        log = []
        mm = mod.nn.modules.module

        replaced = []

        def on_param(m, name, p, mod=mod, log=log, replaced=replaced):
            log.append(("param", name))
            replaced.append(mod.nn.Parameter(p.detach().clone()))
            return replaced[-1]

        handles = [
            mm.register_module_parameter_registration_hook(on_param),
            mm.register_module_buffer_registration_hook(
                lambda m, n, b, log=log: log.append(("buffer", n))),
            mm.register_module_module_registration_hook(
                lambda m, n, s, log=log: log.append(("module", n))),
        ]
        try:
            net = mod.nn.Sequential(mod.nn.Linear(2, 2), mod.nn.BatchNorm1d(2))
            net.extra = mod.nn.ReLU()
        finally:
            for h in handles:
                h.remove()
        assert net[0].weight is replaced[0]
        logs.append(log)
    assert logs[0] == logs[1]


@needs_torch
@pytest.mark.parametrize("target,strict", [("1", False), ("2", False), ("0.sub", False),
                                           ("2", True), ("0.weight", False), ("", False),
                                           ("x.y", False)])
def test_set_submodule_matches_torch(target, strict):
    results = []
    for mod in (ember, torch):
        net = mod.nn.Sequential(mod.nn.Linear(1, 1), mod.nn.ReLU())
        try:
            net.set_submodule(target, mod.nn.Tanh(), strict=strict)
            results.append(repr(net))
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            results.append((type(e).__name__, str(e)))
    assert results[0] == results[1]
