"""ember.distributed.checkpoint planners: the default planners' plans, the custom planners
PyTorch's documentation shows (run the same way on both frameworks), and Stateful values."""

import dataclasses
import io
import warnings

import pytest

import ember
import ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint.planner import LoadItemType, WriteItemType

torch = pytest.importorskip("torch")
import torch.distributed.checkpoint as tdcp  # noqa: E402


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "assuming the intent is ... a single process"
        return fn(*args, **kwargs)


def _planners(mod, dcp_mod):
    """The save/load planners of PyTorch's planner documentation, for one framework."""

    class RenameSave(dcp_mod.DefaultSavePlanner):
        def set_up_planner(self, state_dict, storage_meta=None, is_coordinator=False):
            super().set_up_planner({"foo_" + k: v for k, v in state_dict.items()},
                                   storage_meta, is_coordinator)

    class FP16Save(dcp_mod.DefaultSavePlanner):
        def create_local_plan(self):
            plan = super().create_local_plan()
            for p in plan.items:
                if p.tensor_data is not None:
                    p.tensor_data.properties.dtype = mod.float16
            return plan

        def resolve_data(self, write_item):
            item = super().resolve_data(write_item)
            kind = type(write_item.type).BYTE_IO
            return item if write_item.type == kind else item.to(mod.float16)

    class ExtraDataSave(dcp_mod.DefaultSavePlanner):
        def create_local_plan(self):
            return dataclasses.replace(super().create_local_plan(), planner_data="per-rank")

        def create_global_plan(self, all_plans):
            plans, metadata = super().create_global_plan(all_plans)
            return plans, dataclasses.replace(metadata,
                                              planner_data=[p.planner_data for p in plans])

    class RenameLoad(dcp_mod.DefaultLoadPlanner):
        def set_up_planner(self, state_dict, metadata=None, is_coordinator=False):
            self.original_state_dict = state_dict
            self.state_dict = {"foo_" + k: v for k, v in state_dict.items()}
            self.metadata, self.is_coordinator = metadata, is_coordinator

        def load_bytes(self, read_item, value):
            self.original_state_dict[read_item.dest_index.fqn[4:]] = mod.load(
                value, weights_only=False)

    class Materialize(dcp_mod.DefaultLoadPlanner):
        def resolve_tensor(self, read_item):
            return mod.empty_like(super().resolve_tensor(read_item), device="cpu")

        def commit_tensor(self, read_item, tensor):
            self.state_dict[read_item.dest_index.fqn] = tensor

    return {"rename": RenameSave, "fp16": FP16Save, "extra": ExtraDataSave,
            "rename_load": RenameLoad, "materialize": Materialize}


def _sd(mod):
    return {"w": mod.arange(6.0).reshape(2, 3) / 3, "step": 4}


def _both_save(tmp_path, kind, **kwargs):
    """Save the same state dict with the same planner from ember and from torch."""
    md_e = dcp.save(_sd(ember), checkpoint_id=tmp_path / "e",
                    planner=_planners(ember, dcp)[kind](**kwargs))
    md_t = _quiet(tdcp.save, _sd(torch), checkpoint_id=tmp_path / "t",
                  planner=_planners(torch, tdcp)[kind](**kwargs))
    return md_e, md_t


def test_default_save_plan_items_match_torch():
    def items(mod, m):
        planner = m.DefaultSavePlanner()
        planner.set_up_planner({"w": mod.ones(2, 3), "n": {"s": "x"}}, None, True)
        return [(i.index.fqn, list(i.index.offset or []), i.type.name)
                for i in planner.create_local_plan().items]

    assert items(ember, dcp) == items(torch, tdcp)


def test_default_load_plan_reads_each_overlapping_chunk(tmp_path):
    md = dcp.save({"w": ember.ones(4, 2), "s": 1}, checkpoint_id=tmp_path)
    planner = dcp.DefaultLoadPlanner()
    planner.set_up_planner({"w": ember.zeros(4, 2), "s": 0}, md, True)
    got = [(i.type, list(i.dest_offsets), list(i.lengths)) for i in
           planner.create_local_plan().items]
    assert got == [(LoadItemType.TENSOR, [0, 0], [4, 2]), (LoadItemType.BYTE_IO, [0], [0])]


def test_rename_save_planner_keys_match_torch(tmp_path):
    md_e, md_t = _both_save(tmp_path, "rename")
    assert list(md_e.state_dict_metadata) == list(md_t.state_dict_metadata) == ["foo_w",
                                                                                "foo_step"]


def test_fp16_save_planner_stores_half_like_torch(tmp_path):
    md_e, md_t = _both_save(tmp_path, "fp16")
    assert md_e.state_dict_metadata["w"].properties.dtype == ember.float16
    assert md_t.state_dict_metadata["w"].properties.dtype == torch.float16
    sd_e, sd_t = {"w": ember.zeros(2, 3)}, {"w": torch.zeros(2, 3)}
    dcp.load(sd_e, checkpoint_id=tmp_path / "t")  # torch's half checkpoint, into float32
    _quiet(tdcp.load, sd_t, checkpoint_id=tmp_path / "e")  # and ember's into torch
    assert sd_e["w"].tolist() == sd_t["w"].tolist() == _sd(torch)["w"].half().float().tolist()


def test_extra_data_save_planner_records_planner_data(tmp_path):
    # planner data other than the key paths needs flatten_state_dict=False (in PyTorch too)
    md_e, md_t = _both_save(tmp_path, "extra", flatten_state_dict=False)
    assert md_e.planner_data == md_t.planner_data == ["per-rank"]
    assert tdcp.FileSystemReader(str(tmp_path / "e")).read_metadata().planner_data == [
        "per-rank"]


def test_rename_load_planner_fills_unprefixed_keys(tmp_path):
    dcp.save(_sd(ember), checkpoint_id=tmp_path, planner=_planners(ember, dcp)["rename"]())
    sd = {"w": ember.zeros(2, 3), "step": 0}
    dcp.load(sd, checkpoint_id=tmp_path, planner=_planners(ember, dcp)["rename_load"]())
    assert sd["step"] == 4 and sd["w"].tolist() == _sd(ember)["w"].tolist()


def test_materializing_load_planner_replaces_tensors_like_torch(tmp_path):
    dcp.save(_sd(ember), checkpoint_id=tmp_path)
    sd_e, sd_t = {"w": ember.zeros(2, 3)}, {"w": torch.zeros(2, 3)}
    keep_e, keep_t = sd_e["w"], sd_t["w"]
    planner_e = _planners(ember, dcp)["materialize"]()
    dcp.load(sd_e, checkpoint_id=tmp_path, planner=planner_e)
    planner_t = _planners(torch, tdcp)["materialize"]()
    _quiet(tdcp.load, sd_t, checkpoint_id=tmp_path, planner=planner_t)
    # the planner's own (flattened) dict holds the loaded tensor; the caller's is untouched
    assert planner_e.state_dict["w"].tolist() == planner_t.state_dict["w"].tolist()
    assert keep_e.tolist() == keep_t.tolist() == [[0.0] * 3] * 2


def test_partial_load_skips_keys_the_checkpoint_lacks(tmp_path):
    dcp.save({"w": ember.ones(2)}, checkpoint_id=tmp_path)
    sd = {"w": ember.zeros(2), "extra": ember.full((1,), 7.0)}
    dcp.load(sd, checkpoint_id=tmp_path, planner=dcp.DefaultLoadPlanner(allow_partial_load=True))
    assert sd["w"].tolist() == [1.0, 1.0] and sd["extra"].tolist() == [7.0]


def test_default_load_planner_missing_key_raises(tmp_path):
    dcp.save({"w": ember.ones(2)}, checkpoint_id=tmp_path)
    with pytest.raises(dcp.CheckpointException, match="Missing key in checkpoint"):
        dcp.load({"w": ember.zeros(2), "extra": 1}, checkpoint_id=tmp_path)


def test_resolve_data_pickles_non_tensors_into_bytesio():
    planner = dcp.DefaultSavePlanner()
    planner.set_up_planner({"s": {"a": [1, 2]}}, None, True)
    item = planner.create_local_plan().items[0]
    value = planner.resolve_data(item)
    assert item.type == WriteItemType.BYTE_IO and isinstance(value, io.BytesIO)
    assert ember.load(value, weights_only=False) == [1, 2]


def test_stateful_module_saved_by_ember_loads_into_torch_module(tmp_path):
    ember.manual_seed(0)
    m_e = ember.nn.Linear(3, 2)
    dcp.save({"model": m_e, "epoch": 2}, checkpoint_id=tmp_path)
    m_t = torch.nn.Linear(3, 2)
    sd = {"model": m_t, "epoch": 0}
    _quiet(tdcp.load, sd, checkpoint_id=tmp_path)
    assert sd["epoch"] == 2 and m_t.weight.tolist() == m_e.weight.tolist()


def test_stateful_optimizer_round_trips_through_load_state_dict(tmp_path):
    m = ember.nn.Linear(2, 1)
    opt = ember.optim.Adam(m.parameters(), lr=0.1)
    m(ember.ones(3, 2)).sum().backward()
    opt.step()
    dcp.save({"model": m, "optim": opt}, checkpoint_id=tmp_path)
    m2 = ember.nn.Linear(2, 1)
    opt2 = ember.optim.Adam(m2.parameters(), lr=0.5)
    m2(ember.zeros(1, 2)).sum().backward()
    opt2.step()  # the state's entries exist only after a step (in PyTorch too)
    dcp.load({"model": m2, "optim": opt2}, checkpoint_id=tmp_path)
    assert m2.weight.tolist() == m.weight.tolist() and opt2.param_groups[0]["lr"] == 0.1
    assert opt2.state[m2.weight]["exp_avg"].tolist() == opt.state[m.weight]["exp_avg"].tolist()


def _memory_storage(mod, dcp_mod):
    """A storage layer keeping the checkpoint in a dict, written against the interface."""
    from importlib import import_module

    storage = import_module(dcp_mod.__name__ + ".storage")
    planner = import_module(dcp_mod.__name__ + ".planner")
    narrow = import_module(dcp_mod.__name__ + ".default_planner").narrow_tensor_by_index
    blobs = {}

    def done(value):
        fut = mod.futures.Future()
        fut.set_result(value)
        return fut

    class Writer(storage.StorageWriter):
        def reset(self, checkpoint_id=None):
            pass

        def set_up_storage_writer(self, is_coordinator, *args, **kwargs):
            pass

        def prepare_local_plan(self, plan):
            return plan

        def prepare_global_plan(self, plans):
            return plans

        def write_data(self, plan, planner_):
            results = []
            for item in plan.items:
                value = planner_.resolve_data(item)
                value = value.getvalue() if isinstance(value, io.BytesIO) else value.clone()
                blobs[item.index] = value
                results.append(storage.WriteResult(item.index, 0, item.index))
            return done(results)

        def finish(self, metadata, results):
            blobs["meta"] = dataclasses.replace(metadata, storage_data={
                r.index: r.storage_data for rs in results for r in rs})

        @classmethod
        def validate_checkpoint_id(cls, checkpoint_id):
            return True

    class Reader(storage.StorageReader):
        def reset(self, checkpoint_id=None):
            pass

        def read_metadata(self, *args, **kwargs):
            return blobs["meta"]

        def set_up_storage_reader(self, metadata, is_coordinator, *args, **kwargs):
            self.metadata = metadata

        def prepare_local_plan(self, plan):
            return plan

        def prepare_global_plan(self, plans):
            return plans

        def read_data(self, plan, planner_):
            for item in plan.items:
                stored = blobs[self.metadata.storage_data[item.storage_index]]
                if item.type == planner.LoadItemType.BYTE_IO:
                    planner_.load_bytes(item, io.BytesIO(stored))
                    continue
                target = planner_.resolve_tensor(item)
                target.copy_(narrow(stored, item.storage_offsets, item.lengths))
                planner_.commit_tensor(item, target)
            return done(None)

        @classmethod
        def validate_checkpoint_id(cls, checkpoint_id):
            return True

    return Writer(), Reader()


@pytest.mark.parametrize("fw", ["ember", "torch"])
def test_custom_storage_layer_round_trips_like_torch(fw):
    mod, dcp_mod = (ember, dcp) if fw == "ember" else (torch, tdcp)
    writer, reader = _memory_storage(mod, dcp_mod)
    _quiet(dcp_mod.save, {"w": mod.arange(6.0).reshape(2, 3), "s": {"k": 1}},
           storage_writer=writer)
    sd = {"w": mod.zeros(2, 3), "s": {"k": 0}}
    _quiet(dcp_mod.load, sd, storage_reader=reader)
    assert sd["s"]["k"] == 1 and sd["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
