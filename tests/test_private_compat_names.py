"""Private torch names that public programs import (timm, litgpt, DETR, fast_neural_style):
``torch._assert``, ``torch._utils``, ``torch.testing.assert_allclose``,
``torch.hub._get_torch_home``, ``nn.modules.transformer._get_activation_fn``,
``*Storage.from_buffer``. Each behaves as torch's."""

import os
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def test_assert():
    for T in (ember, torch):
        T._assert(True, "fine")
        T._assert(T.tensor(1) > 0, "fine")
        with pytest.raises(AssertionError, match="must hold"):
            T._assert(False, "must hold")
        with pytest.raises(AssertionError):
            T._assert(T.tensor(0) > 0, "tensor condition")


def test_utils_flatten_and_unflatten_dense_tensors():
    arrays = [np.arange(3, dtype=np.float32), np.ones((2, 2), np.float32)]
    res = []
    for T in (ember, torch):
        ts = [T.tensor(a) for a in arrays]
        flat = T._utils._flatten_dense_tensors(ts)
        back = T._utils._unflatten_dense_tensors(flat * 2, ts)
        res.append((flat.numpy(), [b.numpy() for b in back]))
    np.testing.assert_array_equal(res[0][0], res[1][0])
    for a, b in zip(res[0][1], res[1][1]):
        np.testing.assert_array_equal(a, b)


def test_utils_rebuild_and_device_index():
    e = ember.zeros(3)
    t = ember._utils._rebuild_tensor_v2(e.storage(), 1, (2,), (1,), False, {})
    assert t.shape == (2,)
    for T in (ember, torch):
        assert T._utils._get_device_index("cuda:1") == 1
        assert T._utils._get_device_index(2) == 2
        with pytest.raises(ValueError):
            T._utils._get_device_index("cpu")
        assert T._utils._get_device_index("cpu", allow_cpu=True) == -1
        assert T._utils._import_dotted_name("collections.OrderedDict").__name__ == "OrderedDict"
        assert T._utils._element_size(T.float16) == 2
    sizes = [[len(c) for c in T._utils._take_tensors([T.ones(4)] * 3 + [T.ones(2, dtype=T.int64)],
                                                      32)] for T in (ember, torch)]
    assert sorted(sizes[0]) == sorted(sizes[1])


def test_utils_exception_wrapper():
    for T in (ember, torch):
        try:
            raise KeyError("missing")
        except KeyError:
            w = T._utils.ExceptionWrapper(where="in worker 3")
        with pytest.raises(KeyError, match="in worker 3"):
            w.reraise()
        try:
            raise ValueError("bad")
        except ValueError:
            w = T._utils.ExceptionWrapper()
        with pytest.raises(ValueError, match="Caught ValueError in background"):
            w.reraise()


def test_testing_assert_allclose_warns_and_checks():
    for T in (ember, torch):
        with pytest.warns(FutureWarning, match="assert_allclose"):
            T.testing.assert_allclose(T.ones(2), [1.0, 1.0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            T.testing.assert_allclose(T.ones(2), T.ones(2) + 5e-6)
            with pytest.raises(AssertionError, match="not close"):
                T.testing.assert_allclose(T.ones(2), T.zeros(2))
            with pytest.raises(AssertionError):
                T.testing.assert_allclose(T.ones(2, dtype=T.float64),
                                          T.ones(2, dtype=T.float64) + 5e-5)
            # the looser dtype's tolerance applies
            T.testing.assert_allclose(T.ones(2, dtype=T.float64), T.ones(2) + 5e-5)


def test_hub_torch_home_and_activation_fn(monkeypatch):
    monkeypatch.setenv("TORCH_HOME", os.path.join(os.sep, "tmp", "th"))
    assert ember.hub._get_torch_home() == torch.hub._get_torch_home()
    monkeypatch.delenv("TORCH_HOME")
    assert ember.hub._get_torch_home() == torch.hub._get_torch_home()
    from ember.nn.modules.transformer import _get_activation_fn

    assert _get_activation_fn("relu") is ember.nn.functional.relu
    assert _get_activation_fn("gelu") is ember.nn.functional.gelu
    with pytest.raises(RuntimeError, match="relu/gelu"):
        _get_activation_fn("tanh")


def test_storage_from_buffer():
    buf = np.array([1.5, -2.0], np.float32).tobytes()
    big = np.array([1.5, -2.0], ">f4").tobytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for T in (ember, torch):
            assert T.ByteStorage.from_buffer(b"abc").tolist() == [97, 98, 99]
            assert T.FloatStorage.from_buffer(buf, "native").tolist() == [1.5, -2.0]
            assert T.FloatStorage.from_buffer(big, "big").tolist() == [1.5, -2.0]
            assert T.FloatStorage.from_buffer(buf, "native", count=1, offset=4).tolist() == [-2.0]
            assert T.UntypedStorage.from_buffer(b"ab", dtype=T.uint8).tolist() == [97, 98]
            with pytest.raises(RuntimeError):
                T.FloatStorage.from_buffer(buf)  # byte_order required
            with pytest.raises(RuntimeError):
                T.UntypedStorage.from_buffer(b"ab")  # dtype required


def test_make_subclass_and_private_from_buffer():
    for T in (ember, torch):
        class Weight(T.Tensor):
            pass

        x = T.ones(2, requires_grad=True)
        w = T.Tensor._make_subclass(Weight, x, True)
        assert type(w) is Weight and w.requires_grad and w.is_leaf and w.grad_fn is None
        assert w.data_ptr() == x.data_ptr()
        v = T.Tensor._make_subclass(Weight, x * 2)
        assert not v.requires_grad and v.is_leaf
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert T.ByteStorage._from_buffer(b"ab").tolist() == [97, 98]


def test_config_show_and_parallel_info():
    assert "NumPy" in ember.__config__.show()
    info = ember.__config__.parallel_info()
    assert f"get_num_threads() : {ember.get_num_threads()}" in info
    assert isinstance(torch.__config__.show(), str)  # the same call works in both


def test_inductor_helpers():
    import os

    for T in (ember, torch):
        T._inductor.cudagraph_mark_step_begin()
        entries = {}
        with T._inductor.utils.fresh_inductor_cache(cache_entries=entries):
            assert os.path.isdir(os.environ["TORCHINDUCTOR_CACHE_DIR"])
        T._inductor.utils.clear_inductor_caches()


def test_check_family_matches_torch():
    cases = [
        ("_check", (True,), None), ("_check", (False,), RuntimeError),
        ("_check", (False, lambda: "custom"), RuntimeError),
        ("_check_index", (False,), IndexError), ("_check_value", (False,), ValueError),
        ("_check_type", (False,), TypeError),
        ("_check_not_implemented", (False,), NotImplementedError),
        ("_check_with", (KeyError, False, lambda: "k"), KeyError),
    ]
    for T in (ember, torch):
        for name, args, exc in cases:
            if exc is None:
                assert getattr(T, name)(*args) is None
            else:
                with pytest.raises(exc):
                    getattr(T, name)(*args)
        with pytest.raises(RuntimeError, match="custom"):
            T._check(False, lambda: "custom")
        with pytest.raises(TypeError, match="_check_tensor_all"):
            T._check(T.tensor(True))
        with pytest.raises(TypeError):
            T._check("yes")
        T._check_tensor_all(T.tensor([True, True]))
        with pytest.raises(RuntimeError):
            T._check_tensor_all(T.tensor([True, False]))
        with pytest.raises(ValueError):
            T._check_tensor_all_with(ValueError, T.tensor([False]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            T._check_is_size(0)
            with pytest.raises(RuntimeError):
                T._check_is_size(-1)


def test_softmax_backward_data_matches_torch():
    rng = np.random.default_rng(2)
    g = rng.standard_normal((3, 4)).astype(np.float32)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    for dim in (0, 1):
        outs = []
        for T in (ember, torch):
            y = T.softmax(T.tensor(x), dim)
            outs.append(T._softmax_backward_data(T.tensor(g), y, dim, T.float32).numpy())
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)


def test_tensor_module():
    import ember._tensor

    assert ember._tensor.Tensor is ember.Tensor
    assert callable(ember._tensor._rebuild_from_type_v2)
    t = ember._tensor._rebuild_from_type(ember.ones, ember.Tensor, (2,), {})
    assert t.shape == (2,)


def test_c_switches_match_torch():
    for T in (ember, torch):
        C = T._C
        assert C._jit_set_profiling_mode(False) is True
        assert C._jit_set_profiling_mode(True) is False
        assert C._jit_set_profiling_executor(False) is True
        assert C._jit_set_profiling_executor(True) is False
        assert C._jit_set_texpr_fuser_enabled(True) is None and C._jit_texpr_fuser_enabled()
        C._jit_override_can_fuse_on_cpu(False)
        C._jit_override_can_fuse_on_gpu(False)
        assert C._jit_can_fuse_on_cpu() is False and C._jit_can_fuse_on_gpu() is False
        assert C._get_privateuse1_backend_name() == "privateuseone"
        assert C._get_tracing_state() is None
        assert C._get_accelerator().type == ("cuda" if T.cuda.is_available() else "cpu")
        C._set_grad_enabled(False)
        assert not T.is_grad_enabled()
        C._set_grad_enabled(True)
        assert T.is_grad_enabled()


def test_optimizer_helpers_match_torch():
    import importlib

    for T in (ember, torch):
        o = importlib.import_module(f"{T.__name__}.optim.optimizer")
        p = [T.zeros(2), T.nn.Parameter(T.zeros(3))]
        assert o._default_to_fused_or_foreach(p, False) == (False, False)
        assert o._default_to_fused_or_foreach(p, False, use_fused=True) == (True, False)
        assert o._default_to_fused_or_foreach(p, True, use_fused=True) == (False, False)
        assert o._default_to_fused_or_foreach([T.zeros(2, dtype=T.int64)], False,
                                              use_fused=True) == (False, False)
        assert o._get_capturable_supported_devices(supports_xla=False) == [
            "cuda", "xpu", "hpu", "privateuseone"]
        assert o._get_value(T.tensor(2.5)) == 2.5 and o._get_value(3) == 3
        assert o._get_scalar_dtype() == T.float32 and o._get_scalar_dtype(True) == T.float32
        assert o._to_scalar(T.tensor([0.5])).dim() == 0

        class Sgd(T.optim.Optimizer):
            def __init__(self, params, differentiable=False):
                super().__init__(params, {"lr": 0.1, "differentiable": differentiable})

            @o._use_grad_for_differentiable
            def step(self, closure=None):
                return T.is_grad_enabled()

        w = T.zeros(1, requires_grad=True)
        assert Sgd([w]).step() is False
        assert Sgd([w], differentiable=True).step() is True
        assert T.is_grad_enabled()


def test_pytree_paths_and_private_helpers_match_torch():
    from collections import namedtuple

    import ember.utils._pytree as ep
    import torch.utils._pytree as tp

    P = namedtuple("P", "x y")
    tree = {"a": [1, (2, 3)], "b": P(4, 5)}
    for mod in (ep, tp):
        pairs, _ = mod.tree_flatten_with_path(tree)
        assert [mod.keystr(p) for p, _ in pairs] == ["['a'][0]", "['a'][1][0]", "['a'][1][1]",
                                                    "['b'].x", "['b'].y"]
        assert [v for _, v in mod.tree_leaves_with_path(tree)] == [1, 2, 3, 4, 5]
        assert mod.tree_map_with_path(lambda p, v: len(p) * v, tree) == {
            "a": [2, (6, 9)], "b": P(8, 10)}
        assert mod._dict_flatten({"a": 1, "b": 2}) == ([1, 2], ["a", "b"])
        assert mod._dict_unflatten([1, 2], ["a", "b"]) == {"a": 1, "b": 2}
        assert mod._is_leaf(1) and not mod._is_leaf([1])
        assert str(mod.SequenceKey(1)) == "[1]" and str(mod.GetAttrKey("x")) == ".x"
