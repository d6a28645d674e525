"""ember.distributed.checkpoint: save/load round trips, and checkpoints exchanged with
PyTorch's torch.distributed.checkpoint in both directions."""

import os
import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.distributed.checkpoint as dcp
from tests.distributed import _checkpoint_workers
from tests.distributed.conftest import free_port, needs_mpi

try:
    import torch
    import torch.distributed.checkpoint as tdcp

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")


def _state(mod, fill):
    return {"w": mod.arange(6.0).reshape(2, 3) * fill, "b": mod.ones(3, dtype=mod.bfloat16) * fill,
            "step": 5 if fill else 0, "nested": {"x": mod.tensor(2 * fill), "s": "hi" * fill},
            "lst": [mod.full((2,), float(fill)), 1.5 * fill]}


def _plain(sd):
    out = {}
    for k, v in sd.items():
        if isinstance(v, dict):
            out[k] = _plain(v)
        elif isinstance(v, list):
            out[k] = [_plain({"": x})[""] for x in v]
        elif hasattr(v, "numpy"):
            out[k] = (str(v.dtype).split(".")[-1], v.float().numpy().tolist())
        else:
            out[k] = v
    return out


def test_checkpoint_round_trip_fills_state_dict_in_place(tmp_path):
    dcp.save(_state(ember, 1), checkpoint_id=tmp_path)
    sd = _state(ember, 0)
    w = sd["w"]
    dcp.load(sd, checkpoint_id=tmp_path)
    assert sd["w"] is w and _plain(sd) == _plain(_state(ember, 1))


def test_checkpoint_load_converts_to_the_target_dtype(tmp_path):
    dcp.save({"w": ember.arange(3.0)}, checkpoint_id=tmp_path)
    sd = {"w": ember.zeros(3, dtype=ember.float64)}
    dcp.load(sd, checkpoint_id=tmp_path)
    assert sd["w"].dtype == ember.float64 and sd["w"].tolist() == [0.0, 1.0, 2.0]


@needs_torch
def test_checkpoint_written_by_ember_loads_in_torch(tmp_path):
    dcp.save(_state(ember, 1), checkpoint_id=tmp_path)
    sd = _state(torch, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "assuming ... a single process"
        tdcp.load(sd, checkpoint_id=tmp_path)
    assert _plain(sd) == _plain(_state(torch, 1))


@needs_torch
def test_checkpoint_written_by_torch_loads_in_ember(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tdcp.save(_state(torch, 1), checkpoint_id=tmp_path)
    sd = _state(ember, 0)
    dcp.load(sd, checkpoint_id=tmp_path)
    assert _plain(sd) == _plain(_state(ember, 1))


@needs_torch
def test_checkpoint_metadata_files_list_the_same_entries_as_torch(tmp_path):
    dcp.save(_state(ember, 1), checkpoint_id=tmp_path / "ours")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tdcp.save(_state(torch, 1), checkpoint_id=tmp_path / "theirs")
    ours = tdcp.FileSystemReader(tmp_path / "ours").read_metadata()
    theirs = tdcp.FileSystemReader(tmp_path / "theirs").read_metadata()
    assert ours.state_dict_metadata == theirs.state_dict_metadata
    assert ours.planner_data == theirs.planner_data
    assert set(ours.storage_data) == set(theirs.storage_data)
    assert sorted(os.listdir(tmp_path / "ours")) == sorted(os.listdir(tmp_path / "theirs"))


def test_checkpoint_missing_key_raises_checkpoint_exception(tmp_path):
    dcp.save({"w": ember.ones(2)}, checkpoint_id=tmp_path)
    with pytest.raises(dcp.CheckpointException, match="Missing key in checkpoint"):
        dcp.load({"other": ember.ones(2)}, checkpoint_id=tmp_path)


def test_checkpoint_exception_is_not_an_exception_as_torch():
    assert not issubclass(dcp.CheckpointException, Exception)
    if HAS_TORCH:
        assert not issubclass(tdcp.CheckpointException, Exception)


def test_checkpoint_size_mismatch_raises_and_keeps_target(tmp_path):
    dcp.save({"w": ember.ones(2)}, checkpoint_id=tmp_path)
    sd = {"w": ember.zeros(3)}
    with pytest.raises(dcp.CheckpointException, match="Size mismatch"):
        dcp.load(sd, checkpoint_id=tmp_path)
    assert sd["w"].tolist() == [0.0, 0.0, 0.0]


def test_checkpoint_without_id_or_storage_raises_runtime_error():
    with pytest.raises(RuntimeError, match="checkpoint_id"):
        dcp.save({"w": ember.ones(1)})


def test_checkpoint_writer_without_overwrite_refuses_existing(tmp_path):
    dcp.save({"w": ember.ones(1)}, checkpoint_id=tmp_path)
    with pytest.raises(dcp.CheckpointException, match="overwrite=False"):
        dcp.save({"w": ember.ones(1)},
                 storage_writer=dcp.FileSystemWriter(tmp_path, overwrite=False))


def test_checkpoint_async_save_snapshots_tensors(tmp_path):
    w = ember.ones(2)
    fut = dcp.async_save({"w": w}, checkpoint_id=tmp_path)
    w.add_(1)
    fut.result(timeout=60)
    sd = {"w": ember.zeros(2)}
    dcp.load(sd, checkpoint_id=tmp_path)
    assert sd["w"].tolist() == [1.0, 1.0]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    import ember.multiprocessing as mp

    path = tmp_path_factory.mktemp("dcp")
    mp.spawn(_checkpoint_workers.save_two_ranks,
             args=(f"tcp://127.0.0.1:{free_port()}", str(path)), nprocs=2)
    results = []
    for r in range(2):
        with open(path / f"rank{r}.pkl", "rb") as f:
            results.append(pickle.load(f))
    return path, results


@needs_mpi
def test_checkpoint_two_ranks_write_shared_entries_once(two_ranks):
    path = two_ranks[0] / "plain"
    md = dcp.FileSystemReader(path).read_metadata()
    files = {md.storage_data[i].relative_path: i.fqn for i in md.storage_data}
    sd = {"shared": ember.zeros(4), "rank0": ember.ones(2), "rank1": ember.zeros(2), "step": 0}
    dcp.load(sd, checkpoint_id=path)
    assert sorted(md.state_dict_metadata) == ["rank0", "rank1", "shared", "step"]
    assert sorted(files) == ["__0_0.distcp", "__1_0.distcp"] and files["__1_0.distcp"] == "rank1"
    assert np.array_equal(sd["shared"].numpy(), np.arange(4.0))
    assert sd["rank0"].tolist() == [0.0, 0.0] and sd["rank1"].tolist() == [1.0, 1.0]


@needs_mpi
def test_checkpoint_sharded_model_records_global_size_and_a_chunk_per_rank(two_ranks):
    md = dcp.FileSystemReader(two_ranks[0] / "fsdp").read_metadata()
    w = md.state_dict_metadata["model.0.weight"]
    assert tuple(w.size) == (5, 3)
    assert [(tuple(c.offsets), tuple(c.sizes)) for c in w.chunks] == [((0, 0), (3, 3)),
                                                                     ((3, 0), (2, 3))]


@needs_mpi
def test_checkpoint_sharded_model_loads_whole_in_one_process(two_ranks):
    full = two_ranks[1][0][0]
    model = _checkpoint_workers._model(ember, 2)
    sd = {"model": model.state_dict()}
    dcp.load(sd, checkpoint_id=two_ranks[0] / "fsdp")
    for k, v in model.state_dict().items():
        assert np.array_equal(v.numpy(), full[k]), k


@needs_mpi
def test_checkpoint_sharded_model_loads_into_other_sharded_model(two_ranks):
    for full, reloaded in two_ranks[1]:
        assert sorted(full) == sorted(reloaded)
        assert all(np.array_equal(full[k], reloaded[k]) for k in full)


@needs_mpi
@needs_torch
def test_checkpoint_sharded_model_loads_whole_in_torch(two_ranks):
    full = two_ranks[1][0][0]
    sd = {"model": {k: torch.zeros(v.shape) for k, v in full.items()}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tdcp.load(sd, checkpoint_id=two_ranks[0] / "fsdp")
    for k, v in sd["model"].items():
        assert np.array_equal(v.numpy(), full[k]), k


@pytest.mark.parametrize("module", ["ember.distributed.checkpoint", "filesystem", "metadata",
                                    "api", "state_dict_saver", "state_dict_loader",
                                    "ember.distributed.elastic",
                                    "ember.distributed.elastic.multiprocessing",
                                    "ember.distributed.elastic.multiprocessing.errors",
                                    "ember.nn.parallel.scatter_gather"])
def test_checkpoint_docstring_examples_pass(module, tmp_path, monkeypatch):
    import doctest
    import importlib

    monkeypatch.chdir(tmp_path)
    name = module if module.startswith("ember") else f"ember.distributed.checkpoint.{module}"
    mod = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failed = []
    for t in doctest.DocTestFinder().find(mod):
        t.globs.setdefault("ember", ember)
        if t.examples and runner.run(t, out=lambda s: None).failed:
            failed.append(t.name)
    assert not failed
