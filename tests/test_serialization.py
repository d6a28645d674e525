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
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
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
