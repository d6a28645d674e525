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
