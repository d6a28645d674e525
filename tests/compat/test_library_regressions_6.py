"""What ember needed for captum, opacus, pyro, torchsde and gpytorch
(``test_third_party_libs_5.py``), checked without those libraries: each fix against PyTorch
where it is installed.
"""

import subprocess
import sys
import textwrap
import types
import typing

import numpy as np
import pytest

import ember
from tests.compat.test_third_party_libs import ROOT, _run, needs_torch

# -- ember.distributed.tensor.experimental.implicit_replication (opacus) ---------------------

_DTENSOR_WORLD_OF_ONE = """
    import ember, ember.distributed as dist
    from ember.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.tensor.experimental import implicit_replication
    dist.init_process_group("gloo", rank=0, world_size=1, init_method="file://STORE")
    mesh = init_device_mesh("cpu", (1,))
    x = distribute_tensor(ember.arange(6.0).reshape(2, 3), mesh, [Shard(0)])
    plain = ember.tensor([1.0, 2.0, 3.0])
    try:
        x * plain
    except RuntimeError as e:
        print("outside:", e)
    with implicit_replication():
        y = x * plain
        z = plain + x
    print("inside:", type(y).__name__, y.placements, y.full_tensor().tolist(),
          z.full_tensor().tolist())
    try:
        with implicit_replication():
            raise KeyError("boom")
    except KeyError:
        pass
    try:
        x + plain
    except RuntimeError:
        print("restored")
    dist.destroy_process_group()
"""


def test_implicit_replication_takes_plain_tensors_as_replicated(tmp_path):
    code = textwrap.dedent(_DTENSOR_WORLD_OF_ONE).replace("STORE", (tmp_path / "s").as_posix())
    lines = _run(["-c", code], tmp_path).splitlines()
    assert lines[0].startswith("outside: aten.mul") and \
        "got mixed torch.Tensor and DTensor" in lines[0]
    assert lines[1:] == [
        "inside: DTensor (Shard(dim=0),) [[0.0, 2.0, 6.0], [3.0, 8.0, 15.0]] "
        "[[1.0, 3.0, 5.0], [4.0, 6.0, 8.0]]",
        "restored"]


def test_implicit_replication_at_both_paths_as_torch():
    from ember.distributed._tensor import experimental as old
    from ember.distributed.tensor import experimental

    assert old.implicit_replication is experimental.implicit_replication
    assert "implicit_replication" in experimental.__all__


# -- annotation aliases libraries import ------------------------------------------------------


def _shape_of(alias):
    """``alias`` as nested tuples of class names."""
    origin, args = typing.get_origin(alias), typing.get_args(alias)
    if origin is None:
        name = getattr(alias, "__name__", repr(alias))
        # torch.types.Storage is a class of its own; ember.types.Storage names UntypedStorage
        return "UntypedStorage" if name == "Storage" else name
    parts = tuple(_shape_of(a) if not isinstance(a, list) else tuple(map(_shape_of, a))
                  for a in args)
    if origin in (typing.Union, types.UnionType):  # members as a set: ember's Storage repeats
        return "Union", frozenset(parts)
    return getattr(origin, "__name__", repr(origin)), parts


@needs_torch
@pytest.mark.parametrize("module,names", [
    ("utils.data.dataloader", ["_collate_fn_t", "_worker_init_fn_t"]),
    ("serialization", ["FileLike", "MAP_LOCATION", "STORAGE"]),
])
def test_annotation_aliases_have_torch_shape(module, names):
    import importlib

    ours = importlib.import_module("ember." + module)
    theirs = importlib.import_module("torch." + module)
    for name in names:
        assert _shape_of(getattr(ours, name)) == _shape_of(getattr(theirs, name)), name


def test_serialization_file_like_is_the_types_alias():
    assert ember.serialization.FileLike is ember.types.FileLike


# -- distributions.kl.register_kl (pyro) ------------------------------------------------------


class _OwnBase:
    """A distribution base of a library's own, not derived from ember's (pyro's is one)."""


def test_register_kl_accepts_classes_outside_distribution():
    from ember.distributions import Normal
    from ember.distributions.kl import _KL_REGISTRY, kl_divergence, register_kl

    class Mine(Normal):
        pass

    class Theirs(_OwnBase):
        pass

    @register_kl(Mine, _OwnBase)
    def _kl(p, q):
        return ember.tensor(7.0)

    try:
        assert kl_divergence(Mine(0.0, 1.0), Theirs()).item() == 7.0
    finally:
        del _KL_REGISTRY[Mine, _OwnBase]


@pytest.mark.parametrize("args", [(3, None), (None, "x")])
def test_register_kl_refuses_non_classes_as_torch(args):
    from ember.distributions import Normal
    from ember.distributions.kl import register_kl

    p, q = (Normal if a is None else a for a in args)
    with pytest.raises(TypeError, match=r"issubclass\(\) arg 1 must be a class"):
        register_kl(p, q)


@needs_torch
def test_register_kl_accepts_the_same_as_torch():
    import torch

    from ember.distributions.kl import register_kl

    assert callable(torch.distributions.kl.register_kl(int, torch.distributions.Normal))
    assert callable(register_kl(int, ember.distributions.Normal))


# -- torch.__name__ as pyro's torch_patch reads it ----------------------------------------------

_FAKE_TORCH_PATCH = """
import torch

assert torch.__name__ == "torch", torch.__name__  # what pyro's patch_dependency asserts
SEEN = torch.__name__
"""


def test_pyro_torch_patch_sees_torch_name_only_while_it_loads(tmp_path):
    pkg = tmp_path / "site" / "pyro" / "distributions"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "torch_patch.py").write_text(_FAKE_TORCH_PATCH)
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import torch
        before = torch.__name__
        import pyro.distributions.torch_patch as tp
        print(before, tp.SEEN, torch.__name__, torch.distributions.Normal.__module__)
    """))
    out = _run(["-m", "ember.compat.run", str(tmp_path / "prog.py")], tmp_path,
               extra_path=[tmp_path / "site"])
    assert out.split() == ["ember", "torch", "ember", "torch.distributions.normal"]


def test_name_comes_back_when_the_module_body_raises(tmp_path):
    pkg = tmp_path / "site" / "pyro" / "distributions"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "torch_patch.py").write_text("import torch\nraise ValueError(torch.__name__)\n")
    code = textwrap.dedent("""
        import ember.compat
        ember.compat.install()
        import torch
        try:
            import pyro.distributions.torch_patch
        except ValueError as e:
            print(e, torch.__name__)
        import pyro.distributions
        print(__import__("ember").__name__)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env={"PYTHONPATH": f"{ROOT}:{tmp_path / 'site'}",
                                            "PATH": "/usr/bin:/bin"}, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["torch", "ember", "ember"]


def test_other_modules_see_ember_name_under_the_alias(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "other_lib.py").write_text("import torch\nSEEN = torch.__name__\n")
    (tmp_path / "prog.py").write_text("import other_lib\nprint(other_lib.SEEN)\n")
    out = _run(["-m", "ember.compat.run", str(tmp_path / "prog.py")], tmp_path,
               extra_path=[tmp_path / "site"])
    assert out.strip() == "ember"


# -- bernoulli of 0-d probabilities (pyro's NUTS draws its tree directions so) ----------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bernoulli_zero_dim_probability_is_a_zero_dim_tensor(dtype):
    ember.manual_seed(0)
    p = ember.tensor(0.5, dtype=getattr(ember, dtype))
    draws = [ember.bernoulli(p) for _ in range(8)]
    assert all(d.shape == () and d.dtype == p.dtype for d in draws)
    assert (draws[0] == 1) in (True, False)  # compares as a tensor, not a NumPy scalar


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bernoulli_zero_dim_draws_match_torch(dtype):
    import torch

    got, want = [], []
    for lib, draws in ((ember, got), (torch, want)):
        lib.manual_seed(3)
        p = lib.tensor(0.4, dtype=getattr(lib, dtype))
        draws += [lib.bernoulli(p).item() for _ in range(16)]
        draws.append(lib.zeros(()).bernoulli_(0.7).item())
        draws.append(lib.bernoulli(lib.zeros(()), 0.3).item())
    np.testing.assert_array_equal(got, want)


# -- backends.disable_global_flags (MONAI's set_determinism) ---------------------------------

_FROZEN_FLAGS = """
    import sys
    torch = __import__(sys.argv[1])
    b = torch.backends
    print(b.flags_frozen())
    b.disable_global_flags()
    print(b.flags_frozen())
    for mod, name, value in ((b.cudnn, "benchmark", True), (b.cudnn, "fp32_precision", "tf32"),
                             (b.mkldnn, "enabled", False), (b.miopen, "immediate", True),
                             (b.cuda.matmul, "allow_tf32", True), (b.opt_einsum, "enabled", False)):
        try:
            setattr(mod, name, value)
            print("set", name)
        except RuntimeError as e:
            print(type(e).__name__, e)
    with b.cudnn.flags(enabled=False):
        print("in flags()", b.cudnn.enabled)
    print("after flags()", b.cudnn.enabled)
    print(b.cudnn.set_flags(_deterministic=True)[3], b.cudnn.deterministic)
    with getattr(b, "__allow_nonbracketed_mutation")():
        b.cudnn.benchmark = True
    print(b.cudnn.benchmark, b.flags_frozen())
"""


@needs_torch
def test_frozen_backend_flags_as_torch(tmp_path):
    script = tmp_path / "frozen.py"
    script.write_text(textwrap.dedent(_FROZEN_FLAGS))
    assert _run([str(script), "ember"], tmp_path) == _run([str(script), "torch"], tmp_path)


def test_frozen_flags_refuse_assignment_and_recover():
    from ember.backends import _flags

    b = ember.backends
    old = b.cudnn.deterministic
    b.disable_global_flags()
    try:
        with pytest.raises(RuntimeError, match="after disable_global_flags"):
            b.cudnn.deterministic = not old
        assert b.cudnn.deterministic is old and b.flags_frozen()
    finally:
        _flags._mutable[0] = True
    assert not b.flags_frozen()


# -- what tensordict imports -----------------------------------------------------------------


def test_c_functorch_imports_as_a_module_under_the_alias(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import torch
        from torch._C._functorch import (_add_batch_dim, _remove_batch_dim, get_unwrapped,
                                         is_batchedtensor)
        from torch._functorch.vmap import _maybe_remove_batch_dim
        seen = []
        def f(t):
            seen.append((is_batchedtensor(t), tuple(get_unwrapped(t).shape)))
            return t * 2
        torch.vmap(f)(torch.ones(3, 2))
        # (outside a running vmap, only the way in and out: PyTorch refuses ops on b there)
        b = _add_batch_dim(torch.arange(6.0).reshape(3, 2), 1, 1000)
        print(seen, is_batchedtensor(b), tuple(b.shape),
              _remove_batch_dim(b, 1000, 2, 0).tolist(),
              _maybe_remove_batch_dim("f", torch.ones(2), 1000, 3, 1).shape)
    """))
    out = _run(["-m", "ember.compat.run", str(tmp_path / "prog.py")], tmp_path)
    assert out.strip() == ("[(True, (3, 2))] True (3,) [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]] "
                           "torch.Size([2, 3])")


@needs_torch
def test_functorch_queries_and_errors_as_torch():
    import torch
    from torch._C import _functorch as tf
    from torch._functorch import vmap as tv

    from ember._C import _functorch as ef
    from ember._functorch import vmap as ev

    assert ef.is_batchedtensor(ember.ones(2)) is tf.is_batchedtensor(torch.ones(2)) is False
    for lib, x in ((ef, ember.ones(2)), (tf, torch.ones(2))):
        with pytest.raises(RuntimeError, match="No wrappers present!"):
            lib.get_unwrapped(x)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        ef.is_batchedtensor(3)
    for mod in (ev, tv):
        assert mod._get_name(len) == "len"
        with pytest.raises(ValueError, match="must only return Tensors, got type <class 'int'>"):
            mod._maybe_remove_batch_dim("f", 3, 1, 2, 0)
        assert mod._maybe_remove_batch_dim("f", 3, 1, 2, None) == 3
    import functools

    spec_e = ember.utils._pytree.tree_flatten((1, [2, 3]))[1]
    spec_t = torch.utils._pytree.tree_flatten((1, [2, 3]))[1]
    for dims in (0, (0, None), (0, [1, 2]), (0, 1, 2)):
        assert ev._broadcast_to_and_flatten(dims, spec_e) == \
            tv._broadcast_to_and_flatten(dims, spec_t)
    assert ev._get_name(functools.partial(max, 1)) == tv._get_name(functools.partial(max, 1))


@needs_torch
def test_swap_tensor_as_torch(tmp_path):
    script = tmp_path / "swap.py"
    script.write_text(textwrap.dedent("""
        import sys
        from importlib import import_module
        torch = import_module(sys.argv[1])
        acc = import_module(sys.argv[1] + ".nn.utils._named_member_accessor")
        m = torch.nn.Linear(2, 2)
        m.register_buffer("b", torch.zeros(1))
        m.extra, m.number = torch.ones(1), 3
        for name, t in (("weight", torch.ones(2, 2)), ("b", torch.ones(1)),
                        ("extra", torch.zeros(1)), ("nope", torch.ones(1)), ("a.b", None),
                        ("", None), ("number", None), ("weight", 3), ("bias", None),
                        ("b", acc._MISSING), ("extra", acc._MISSING)):
            try:
                old = acc.swap_tensor(m, name, t)
                print(name, type(old).__name__, type(getattr(m, name, None)).__name__,
                      name in m._parameters, name in m._buffers, name in m.__dict__)
            except Exception as e:
                print(type(e).__name__, e)
        print(acc.swap_tensor(m, "new", torch.ones(1), allow_missing=True) is acc._MISSING)
    """))
    assert _run([str(script), "ember"], tmp_path) == _run([str(script), "torch"], tmp_path)


def test_uninitialized_placeholders_share_the_mixin():
    from ember.nn.parameter import (UninitializedBuffer, UninitializedParameter,
                                    UninitializedTensorMixin, is_lazy)

    b, p = UninitializedBuffer(), UninitializedParameter()
    assert isinstance(b, UninitializedTensorMixin) and isinstance(p, UninitializedTensorMixin)
    assert repr(b) == "<UninitializedBuffer>" and is_lazy(b)
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        _ = b.shape
    b.materialize((3,))
    assert type(b) is ember.Tensor and tuple(b.shape) == (3,) and not is_lazy(b)


@needs_torch
def test_worker_numpy_seed_words_as_torch():
    from torch.utils.data._utils.worker import _generate_state as theirs

    from ember.utils.data._utils.worker import _generate_state as ours

    for base, worker in ((5, 0), (2 ** 40 + 3, 7), (0, 3)):
        assert ours(base, worker) == theirs(base, worker)


@needs_torch
def test_pytree_helpers_as_torch():
    import os

    import torch.utils._pytree as tp

    import ember.utils._pytree as ep

    for x in ([7, 8], (7,), [], ()):
        fn = "_tuple_flatten_with_keys" if isinstance(x, tuple) else "_list_flatten_with_keys"
        assert repr(getattr(ep, fn)(x)) == repr(getattr(tp, fn)(x))
    for x in (1, None, [], {}, (), [1], {"a": 1}, "s"):
        assert ep.tree_is_leaf(x) == tp.tree_is_leaf(x), x
        assert ep.tree_is_leaf(x, is_leaf=lambda n: isinstance(n, list)) == \
            tp.tree_is_leaf(x, is_leaf=lambda n: isinstance(n, list)), x
    for x in (os.stat("."), os.stat_result, (1, 2), tuple, 3):
        for fn in ("is_structseq", "is_structseq_class", "is_structseq_instance"):
            assert getattr(ep, fn)(x) == getattr(tp, fn)(x), (fn, x)


@needs_torch
def test_traceable_wrapper_subclass_checks_as_torch():
    import torch
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass as theirs

    from ember.utils._python_dispatch import is_traceable_wrapper_subclass as ours

    def classes(base):
        class Plain(base):
            pass

        class Wrapper(base):
            def __tensor_flatten__(self):
                return [], None

            @staticmethod
            def __tensor_unflatten__(inner, meta, size, stride):
                return None

        return Plain, Wrapper

    for lib, check in ((ember, ours), (torch, theirs)):
        plain, wrapper = classes(lib.Tensor)
        x = lib.ones(2)
        assert [check(x), check(x.as_subclass(plain)), check(x.as_subclass(wrapper)),
                check(3)] == [False, False, True, False]


@needs_torch
def test_get_device_module_as_torch():
    import torch._utils as tu

    import ember._utils as eu

    assert eu._get_device_module("cpu") is ember.cpu
    assert eu._get_device_module("cuda") is ember.cuda
    with pytest.raises(RuntimeError) as ours:
        eu._get_device_module("meta")
    with pytest.raises(RuntimeError) as theirs:
        tu._get_device_module("meta")
    assert str(ours.value) == str(theirs.value)


def test_contextlib_base_is_the_grad_modes_base():
    from ember.utils._contextlib import _DecoratorContextManager

    assert isinstance(ember.no_grad(), _DecoratorContextManager)
