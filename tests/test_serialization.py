"""ember.save / ember.load: PyTorch's zip format both ways, safety, atomicity, safetensors."""

import io
import os
import pickle
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import nn
from tests.conftest import HAS_TORCH

FIXTURES = Path(__file__).parent / "fixtures"


def _arr(*shape, dtype=np.float32):
    return ember.from_numpy(np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape))


def test_round_trip_values_dtypes_and_sharing(tmp_path):
    base = _arr(3, 4)
    obj = {"base": base, "col": ember.from_numpy(base.numpy()[:, 1]),
           "h": ember.from_numpy(np.array([1.5, 2.0], np.float16)),
           "b": ember.from_numpy(np.array([1.5, 2.0], np.float32)).to(ember.bfloat16),
           "flag": ember.from_numpy(np.array([True, False])), "n": [1, "x", (2.5, None)],
           "dtype": ember.float64, "size": ember.Size([2, 3])}
    path = tmp_path / "ck.pt"
    ember.save(obj, path)
    back = ember.load(path)
    assert back["base"].tolist() == base.tolist()
    assert back["col"].tolist() == [1.0, 5.0, 9.0]
    assert back["h"].dtype == ember.float16 and back["b"].dtype == ember.bfloat16
    assert back["flag"].tolist() == [True, False]
    assert back["n"] == [1, "x", (2.5, None)] and back["dtype"] is ember.float64
    assert back["size"] == (2, 3) and isinstance(back["size"], ember.Size)
    # the two views still share one storage
    back["base"].numpy()[0, 1] = 100
    assert back["col"].tolist()[0] == 100


def test_state_dict_round_trip_keeps_metadata_and_parameters(tmp_path):
    m = nn.Sequential(nn.Linear(3, 2))
    path = tmp_path / "m.pt"
    ember.save(m.state_dict(), path)
    sd = ember.load(path)
    assert isinstance(sd, OrderedDict) and list(sd) == ["0.weight", "0.bias"]
    assert sd._metadata["0"] == {"version": 1}
    m2 = nn.Sequential(nn.Linear(3, 2))
    m2.load_state_dict(sd)
    assert m2[0].weight.tolist() == m[0].weight.tolist()
    p = nn.Parameter(ember.ones(2))
    ember.save({"p": p}, path)
    q = ember.load(path)["p"]
    assert isinstance(q, nn.Parameter) and q.requires_grad


def test_file_objects_and_pathlike(tmp_path):
    buf = io.BytesIO()
    ember.save(_arr(2), buf)
    buf.seek(0)
    assert ember.load(buf).tolist() == [0.0, 1.0]
    ember.save(_arr(3), str(tmp_path / "s.pt"))
    assert ember.load(str(tmp_path / "s.pt")).shape == (3,)


def test_zip_layout_matches_pytorch(tmp_path):
    import zipfile

    path = tmp_path / "model.pt"
    ember.save({"w": _arr(2, 2)}, path)
    with zipfile.ZipFile(path) as zf:
        names = [i.filename for i in zf.infolist()]
        assert names == ["model/data.pkl", "model/.format_version", "model/.storage_alignment",
                         "model/byteorder", "model/data/0", "model/version",
                         "model/.data/serialization_id"]
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
        info = zf.getinfo("model/data/0")
    raw = path.read_bytes()
    name_len, extra_len = np.frombuffer(raw[info.header_offset + 26:info.header_offset + 30],
                                        "<u2")
    assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0


def test_loads_committed_pytorch_fixtures_without_torch():
    sd = ember.load(FIXTURES / "torch_state_dict.pt")
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                        "1.running_var", "1.num_batches_tracked"]
    assert sd["1.num_batches_tracked"].dtype == ember.int64
    mixed = ember.load(FIXTURES / "torch_mixed.pt")
    assert mixed["col"].tolist() == [1.0, 5.0, 9.0]
    assert mixed["t"].shape == (4, 3) and mixed["t"].stride() == (1, 4)
    assert mixed["half"].dtype == ember.float16 and mixed["bf16"].tolist() == [1.5, -2.0]
    assert mixed["long"].tolist() == [1, 2 ** 40] and mixed["mask"].dtype == ember.bool
    assert mixed["nested"][1] == (1, "two", 3.0) and mixed["scalar"].item() == 7.0
    assert np.shares_memory(mixed["base"].numpy(), mixed["col"].numpy())
    opt = ember.load(FIXTURES / "torch_adam_state.pt")
    assert set(opt["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    assert opt["param_groups"][0]["betas"] == (0.9, 0.999)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_ember_files_load_in_pytorch_weights_only(tmp_path):
    import torch

    base = _arr(3, 4)
    obj = OrderedDict(w=base, v=ember.from_numpy(base.numpy()[:, 2]),
                      p=nn.Parameter(ember.ones(2)), i=_arr(3, dtype=np.int64),
                      b=ember.ones(2).to(ember.bfloat16), dt=ember.float16, nested=[{"k": 1}])
    path = tmp_path / "e.pt"
    ember.save(obj, path)
    t = torch.load(path, weights_only=True)
    assert t["w"].tolist() == base.tolist() and t["v"].tolist() == [2.0, 6.0, 10.0]
    assert isinstance(t["p"], torch.nn.Parameter) and t["b"].dtype == torch.bfloat16
    assert t["dt"] is torch.float16 and t["nested"] == [{"k": 1}]
    assert t["v"].untyped_storage().data_ptr() == t["w"].untyped_storage().data_ptr()


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_pytorch_written_files_load(tmp_path):
    import torch

    m = torch.nn.Linear(4, 3)
    path = tmp_path / "t.pt"
    torch.save({"sd": m.state_dict(), "nc": torch.arange(6.0).reshape(2, 3).t()}, path)
    back = ember.load(path)
    assert back["sd"]["weight"].tolist() == m.weight.tolist()
    assert back["nc"].tolist() == torch.arange(6.0).reshape(2, 3).t().tolist()


class Evil:
    def __reduce__(self):
        return (os.system, ("touch /tmp/ember_pwned",))


def test_crafted_pickle_is_refused_and_runs_nothing(tmp_path):
    marker = Path("/tmp/ember_pwned")
    if marker.exists():
        marker.unlink()
    path = tmp_path / "evil.pt"
    ember.save({"x": Evil()}, path)
    # os.system pickles as posix.system, a module PyTorch blocks even when allow-listed
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL posix.system whose module posix"):
        ember.load(path)
    assert not marker.exists()


class Point:
    def __init__(self, x):
        self.x = x


def test_weights_only_false_and_safe_globals(tmp_path):
    path = tmp_path / "obj.pt"
    ember.save({"pt": Point(3)}, path)
    with pytest.raises(pickle.UnpicklingError):
        ember.load(path)
    assert ember.load(path, weights_only=False)["pt"].x == 3
    with ember.serialization.safe_globals([Point]):
        assert ember.load(path)["pt"].x == 3
    with pytest.raises(pickle.UnpicklingError):
        ember.load(path)


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "ck.pt"
    ember.save({"v": _arr(2)}, path)

    class Boom:
        def __reduce__(self):
            raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        ember.save({"v": Boom()}, path)
    assert ember.load(path)["v"].tolist() == [0.0, 1.0]
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]


def test_mmap_load(tmp_path):
    path = tmp_path / "big.pt"
    ember.save({"w": _arr(100)}, path)
    back = ember.load(path, mmap=True)
    assert back["w"].tolist() == list(range(100))
    with pytest.raises(ValueError):
        ember.load(io.BytesIO(path.read_bytes()), mmap=True)


def test_map_location_accepts_forms(tmp_path):
    path = tmp_path / "m.pt"
    ember.save(_arr(2), path)
    for loc in ["cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda s, loc: s]:
        assert ember.load(path, map_location=loc).tolist() == [0.0, 1.0]


def test_pickle_copies_tensors():
    t = _arr(3)
    t2 = pickle.loads(pickle.dumps(t))
    assert t2.tolist() == t.tolist() and not np.shares_memory(t2.numpy(), t.numpy())


def test_safetensors_round_trip_and_against_reference(tmp_path):
    tensors = {"a": _arr(2, 3), "b": ember.ones(4).to(ember.bfloat16), "c": _arr(2, dtype=np.int64)}
    path = tmp_path / "x.safetensors"
    ember.serialization.save_file(tensors, path, metadata={"format": "pt"})
    back = ember.serialization.load_file(path)
    assert back["a"].tolist() == tensors["a"].tolist() and back["b"].dtype == ember.bfloat16
    st = pytest.importorskip("safetensors.numpy")
    ref = st.load_file(str(path))
    assert ref["a"].tolist() == tensors["a"].tolist()
    st.save_file({"z": np.arange(3, dtype=np.float32)}, str(tmp_path / "ref.safetensors"))
    assert ember.serialization.load_file(tmp_path / "ref.safetensors")["z"].tolist() == \
        [0.0, 1.0, 2.0]


# ------------------------------------------------------------------------------------------------
# every file torch.save writes: whole modules, legacy format, mmap, safe globals, locations

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _torch_model():
    import torch

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(), torch.nn.BatchNorm1d(2))
    opt = torch.optim.Adam(m.parameters(), lr=0.01)
    m(torch.randn(4, 3)).sum().backward()
    opt.step()
    return m, opt


def test_whole_module_round_trip_ember_to_ember(tmp_path):
    m = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    ember.save(m, tmp_path / "m.pt")
    back = ember.load(tmp_path / "m.pt", weights_only=False)
    x = ember.ones(2, 3)
    assert isinstance(back, nn.Sequential) and back(x).tolist() == m(x).tolist()


def test_whole_optimizer_round_trip_ember_to_ember(tmp_path):
    m = nn.Linear(3, 2)
    opt = ember.optim.Adam(m.parameters(), lr=0.1)
    m(ember.ones(1, 3)).sum().backward()
    opt.step()
    ember.save(opt, tmp_path / "o.pt")
    back = ember.load(tmp_path / "o.pt", weights_only=False)
    assert isinstance(back, ember.optim.Adam) and back.param_groups[0]["lr"] == 0.1
    assert back.state_dict()["state"][0]["exp_avg"].tolist() == \
        opt.state_dict()["state"][0]["exp_avg"].tolist()


def test_whole_module_refused_by_default(tmp_path):
    ember.save(nn.Linear(2, 2), tmp_path / "m.pt")
    with pytest.raises(pickle.UnpicklingError, match="ember.nn.modules.linear.Linear"):
        ember.load(tmp_path / "m.pt")


@needs_torch
def test_torch_pickled_module_loads_as_ember_module(tmp_path):
    import torch

    m, _ = _torch_model()
    torch.save(m, tmp_path / "m.pt")
    back = ember.load(tmp_path / "m.pt", weights_only=False)
    assert isinstance(back[2], nn.BatchNorm1d)
    back.eval()
    m.eval()
    x = np.ones((4, 3), np.float32)
    assert np.allclose(back(ember.from_numpy(x)).detach().numpy(),
                       m(torch.from_numpy(x)).detach().numpy(), atol=1e-6)


@needs_torch
def test_torch_pickled_module_loads_with_ember_classes_allowed(tmp_path):
    import torch

    m, _ = _torch_model()
    torch.save(m, tmp_path / "m.pt")
    with ember.serialization.safe_globals([nn.Sequential, nn.Linear, nn.ReLU, nn.BatchNorm1d]):
        assert isinstance(ember.load(tmp_path / "m.pt"), nn.Sequential)


@needs_torch
def test_torch_pickled_optimizer_loads_as_ember_optimizer(tmp_path):
    import torch

    _, opt = _torch_model()
    torch.save(opt, tmp_path / "o.pt")
    back = ember.load(tmp_path / "o.pt", weights_only=False)
    assert isinstance(back, ember.optim.Adam) and back.param_groups[0]["lr"] == 0.01
    assert back.state_dict()["state"][0]["exp_avg"].tolist() == \
        opt.state_dict()["state"][0]["exp_avg"].tolist()


@needs_torch
def test_legacy_format_from_torch_loads(tmp_path):
    import torch

    base = torch.arange(12.0).reshape(3, 4)
    torch.save({"x": base, "col": base[:, 1], "i": torch.tensor([1, 2 ** 40])},
               tmp_path / "l.pt", _use_new_zipfile_serialization=False)
    back = ember.load(tmp_path / "l.pt")
    assert back["x"].tolist() == base.tolist() and back["col"].tolist() == [1.0, 5.0, 9.0]
    assert back["i"].tolist() == [1, 2 ** 40]
    assert np.shares_memory(back["x"].numpy(), back["col"].numpy())


@needs_torch
def test_legacy_format_from_ember_loads_in_torch(tmp_path):
    import torch

    ember.save({"x": _arr(2, 3), "p": nn.Parameter(ember.ones(2))}, tmp_path / "l.pt",
               _use_new_zipfile_serialization=False)
    back = torch.load(tmp_path / "l.pt", weights_only=True)
    assert back["x"].tolist() == _arr(2, 3).tolist()
    assert isinstance(back["p"], torch.nn.Parameter)


def test_legacy_format_round_trip_ember(tmp_path):
    ember.save([_arr(2, 2), 3], tmp_path / "l.pt", _use_new_zipfile_serialization=False)
    back = ember.load(tmp_path / "l.pt")
    assert back[0].tolist() == [[0.0, 1.0], [2.0, 3.0]] and back[1] == 3


def test_legacy_format_refuses_mmap(tmp_path):
    ember.save(_arr(2), tmp_path / "l.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="mmap can only be used"):
        ember.load(tmp_path / "l.pt", mmap=True)


def _backed_by_mmap(a):
    import mmap

    while a is not None:
        if isinstance(a, mmap.mmap):
            return True
        a = getattr(a, "base", None) if not isinstance(a, np.memmap) else a._mmap
    return False


def test_mmap_load_maps_the_file(tmp_path):
    ember.save({"w": _arr(4, 4)}, tmp_path / "m.pt")
    back = ember.load(tmp_path / "m.pt", mmap=True)
    assert back["w"].tolist() == _arr(4, 4).tolist()
    assert _backed_by_mmap(back["w"].numpy())


def test_mmap_private_writes_do_not_reach_the_file(tmp_path):
    ember.save({"w": _arr(3)}, tmp_path / "m.pt")
    back = ember.load(tmp_path / "m.pt", mmap=True)
    back["w"].numpy()[0] = 42
    assert ember.load(tmp_path / "m.pt")["w"].tolist() == [0.0, 1.0, 2.0]


def test_mmap_needs_a_path():
    buf = io.BytesIO()
    ember.save(_arr(2), buf)
    buf.seek(0)
    with pytest.raises(ValueError, match="f must be a file path"):
        ember.load(buf, mmap=True)


def test_saved_file_honours_umask(tmp_path):
    old = os.umask(0o022)
    try:
        ember.save(_arr(2), tmp_path / "p.pt")
    finally:
        os.umask(old)
    assert (tmp_path / "p.pt").stat().st_mode & 0o777 == 0o644


def _numpy_checkpoint(path):
    ember.save({"a": np.arange(3), "b": np.float64(2.0)}, path)


NUMPY_GLOBALS = [np._core.multiarray._reconstruct, np.ndarray, np.dtype,
                 np._core.multiarray.scalar]


def test_numpy_array_refused_names_global_and_fix(tmp_path):
    _numpy_checkpoint(tmp_path / "n.pt")
    with pytest.raises(pickle.UnpicklingError) as info:
        ember.load(tmp_path / "n.pt")
    msg = str(info.value)
    assert "GLOBAL numpy._core.multiarray._reconstruct was not an allowed global" in msg
    assert "add_safe_globals([numpy._core.multiarray._reconstruct])" in msg
    assert "weights_only=False" in msg


def test_numpy_array_needs_dtype_class_allowed_as_in_torch(tmp_path):
    _numpy_checkpoint(tmp_path / "n.pt")
    with ember.serialization.safe_globals(NUMPY_GLOBALS):
        with pytest.raises(pickle.UnpicklingError, match="Int64DType"):
            ember.load(tmp_path / "n.pt")
    allowed = NUMPY_GLOBALS + [np.dtypes.Int64DType, np.dtypes.Float64DType]
    with ember.serialization.safe_globals(allowed):
        back = ember.load(tmp_path / "n.pt")
    assert back["a"].tolist() == [0, 1, 2] and back["b"] == 2.0


@needs_torch
def test_numpy_checkpoint_from_torch_same_unsafe_globals(tmp_path):
    import torch

    torch.save({"a": np.arange(3), "b": np.float64(2.0)}, tmp_path / "n.pt")
    assert sorted(ember.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "n.pt")) == \
        sorted(torch.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "n.pt"))


def test_unsafe_globals_skip_user_allowed(tmp_path):
    _numpy_checkpoint(tmp_path / "n.pt")
    with ember.serialization.safe_globals([np.ndarray]):
        found = ember.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "n.pt")
    assert "numpy.ndarray" not in found and "numpy.dtype" in found


def test_safe_globals_context_restores_previous(tmp_path):
    S = ember.serialization
    S.clear_safe_globals()
    S.add_safe_globals([Point])
    with S.safe_globals([np.ndarray]):
        assert set(S.get_safe_globals()) == {Point, np.ndarray}
    assert S.get_safe_globals() == [Point]
    S.clear_safe_globals()
    assert S.get_safe_globals() == []


def test_safe_globals_tuple_names_an_alias(tmp_path):
    ember.save({"pt": Point(1)}, tmp_path / "p.pt")
    with ember.serialization.safe_globals([(Point, "tests.test_serialization.Point")]):
        assert ember.load(tmp_path / "p.pt")["pt"].x == 1


def test_env_force_weights_only_beats_argument(tmp_path, monkeypatch):
    _numpy_checkpoint(tmp_path / "n.pt")
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(pickle.UnpicklingError):
        ember.load(tmp_path / "n.pt", weights_only=False)


def test_env_force_no_weights_only_fills_default(tmp_path, monkeypatch):
    _numpy_checkpoint(tmp_path / "n.pt")
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "true")
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"):
        assert ember.load(tmp_path / "n.pt")["a"].tolist() == [0, 1, 2]
    with pytest.raises(pickle.UnpicklingError):
        ember.load(tmp_path / "n.pt", weights_only=True)


def test_env_both_forces_raise(tmp_path, monkeypatch):
    ember.save(_arr(2), tmp_path / "a.pt")
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(RuntimeError, match="Only one of"):
        ember.load(tmp_path / "a.pt")


class _CudaTag:
    """Tags every storage "cuda:0" while active, as a checkpoint saved from a GPU."""

    def __enter__(self):
        reg = ember.serialization._locations._package_registry
        self.entry = (0, lambda obj: "cuda:0", lambda obj, loc: None)
        reg.insert(0, self.entry)

    def __exit__(self, *exc):
        ember.serialization._locations._package_registry.remove(self.entry)


@pytest.fixture
def cuda_checkpoint(tmp_path):
    path = tmp_path / "gpu.pt"
    with _CudaTag():
        ember.save({"w": _arr(4)}, path)
    return path


@pytest.mark.skipif(ember.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_checkpoint_without_map_location_raises(cuda_checkpoint):
    with pytest.raises(RuntimeError, match="map_location=torch.device\\('cpu'\\)"):
        ember.load(cuda_checkpoint)


@pytest.mark.parametrize("map_location", [
    "cpu", ember.device("cpu"), {"cuda:0": "cpu"}, lambda storage, loc: storage],
    ids=["str", "device", "dict", "callable"])
def test_cuda_checkpoint_map_location_forms(cuda_checkpoint, map_location):
    back = ember.load(cuda_checkpoint, map_location=map_location)
    assert back["w"].device.type == "cpu" and back["w"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_map_location_callable_sees_storage_and_location(cuda_checkpoint):
    seen = []

    def place(storage, location):
        seen.append((type(storage).__name__, location))
        return storage

    ember.load(cuda_checkpoint, map_location=place)
    assert seen == [("UntypedStorage", "cuda:0")]


@needs_torch
@pytest.mark.skipif(ember.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_checkpoint_same_error_in_torch(cuda_checkpoint):
    import torch

    with pytest.raises(RuntimeError) as theirs:
        torch.load(cuda_checkpoint)
    with pytest.raises(RuntimeError) as ours:
        ember.load(cuda_checkpoint)
    assert str(ours.value) == str(theirs.value)
    assert torch.load(cuda_checkpoint, map_location="cpu")["w"].tolist() == [0, 1, 2, 3]


def test_default_restore_location_unknown_tag_raises():
    s = ember.ones(2).untyped_storage()
    with pytest.raises(RuntimeError, match="tagged with foo"):
        ember.serialization.default_restore_location(s, "foo")


def test_skip_data_saves_zeros(tmp_path):
    with ember.serialization.skip_data():
        ember.save(_arr(3) + 1, tmp_path / "z.pt")
    assert ember.load(tmp_path / "z.pt").tolist() == [0.0, 0.0, 0.0]


def test_set_default_load_endianness_rejects_strings():
    with pytest.raises(TypeError, match="set_default_load_endianness"):
        ember.serialization.set_default_load_endianness("big")


def test_big_endian_fallback_swaps_files_without_byteorder(tmp_path):
    import zipfile

    ember.save(ember.tensor([1, 2], dtype=ember.int32), tmp_path / "b.pt")
    src = zipfile.ZipFile(tmp_path / "b.pt")
    with zipfile.ZipFile(tmp_path / "nb.pt", "w") as out:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("data/0"):
                data = np.frombuffer(data, "<i4").astype(">i4").tobytes()
            if not info.filename.endswith("byteorder"):
                out.writestr(info.filename, data)
    S = ember.serialization
    S.set_default_load_endianness(S.LoadEndianness.BIG)
    try:
        assert ember.load(tmp_path / "nb.pt").tolist() == [1, 2]
    finally:
        S.set_default_load_endianness(None)


def test_safetensors_path_dispatches_from_load(tmp_path):
    ember.serialization.save_file({"w": _arr(2)}, tmp_path / "w.safetensors")
    assert ember.load(tmp_path / "w.safetensors")["w"].tolist() == [0.0, 1.0]


@needs_torch
def test_serialization_public_names_match_torch():
    import torch

    missing = [n for n in torch.serialization.__all__ if not hasattr(ember.serialization, n)]
    assert missing == []
