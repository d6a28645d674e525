"""``DefaultSavePlanner`` and ``DefaultLoadPlanner``: the plans ``save`` and ``load`` use
unless given another (see NOTE [ Checkpoint planners ] in ``planner.py``), and the plan
helpers they are built from.

Saving: the state dict is flattened (``"optim.state.0.exp_avg"``); each rank plans every
entry it holds; the coordinator keeps an entry several ranks hold on the lowest of them
(a ``fully_shard`` shard stays with its own rank, NOTE [ Sharded entries in checkpoints ])
and records each tensor's chunks in ``Metadata``. Loading: each entry asks, from every
stored chunk that overlaps the part of the tensor it holds, just that overlap.
"""

from __future__ import annotations

import collections
import dataclasses
import io

from ._flatten import flatten, set_at
from .metadata import (BytesStorageMetadata, ChunkStorageMetadata, Metadata, MetadataIndex,
                       TensorProperties, TensorStorageMetadata)
from .planner import (LoadItemType, LoadPlan, LoadPlanner, ReadItem, SavePlan, SavePlanner,
                      TensorWriteData, WriteItem, WriteItemType)

__all__ = ["DefaultLoadPlanner", "DefaultSavePlanner", "create_default_global_load_plan",
           "create_default_global_save_plan", "create_default_local_load_plan",
           "create_default_local_save_plan", "dedup_save_plans", "find_state_dict_object",
           "flatten_state_dict", "narrow_tensor_by_index", "set_element"]


def _Size(values):  # noqa: N802 -- reads as the constructor it calls
    from ... import Size

    return Size(values)


def flatten_state_dict(state_dict: dict) -> tuple[dict, dict]:
    """Flatten nested dicts (and lists holding tensors) into ``"a.b.0"`` keys.

    Args:
        state_dict (dict): a nested state dict.

    Returns:
        (dict, dict): flattened key -> value, and flattened key -> its path of keys.

    Example::

        >>> from ember.distributed.checkpoint.default_planner import flatten_state_dict
        >>> flatten_state_dict({"a": {"b": 1}, "c": [ember.ones(1)]})[1]
        {'a.b': ('a', 'b'), 'c.0': ('c', 0)}
    """
    return flatten(state_dict)


def set_element(root_dict: dict, path: tuple, value) -> None:
    """Put ``value`` at ``path`` (keys and list indices) in a nested state dict.

    Args:
        root_dict (dict): the nested state dict.
        path (tuple): as ``flatten_state_dict`` returns it.
        value: the new value.

    Example::

        >>> from ember.distributed.checkpoint.default_planner import set_element
        >>> d = {"a": {"b": 1}}; set_element(d, ("a", "b"), 2); d
        {'a': {'b': 2}}
    """
    set_at(root_dict, path, value)


def narrow_tensor_by_index(tensor, offsets, sizes):
    """The view of ``tensor`` that starts at ``offsets`` and spans ``sizes``.

    Args:
        tensor (Tensor): the whole tensor.
        offsets (sequence of int): the first index in each dimension.
        sizes (sequence of int): the extent in each dimension.

    Returns:
        Tensor: a view.

    Example::

        >>> from ember.distributed.checkpoint.default_planner import narrow_tensor_by_index
        >>> narrow_tensor_by_index(ember.arange(6).reshape(2, 3), [0, 1], [2, 2])
        tensor([[1, 2],
                [4, 5]])
    """
    out = tensor
    for dim, (start, length) in enumerate(zip(offsets, sizes)):
        if start != 0 or length != out.shape[dim]:
            out = out.narrow(dim, start, length)
    return out


def find_state_dict_object(state_dict: dict, index: MetadataIndex):
    """The (flattened) state dict's value an index names.

    Args:
        state_dict (dict): a flattened state dict.
        index (MetadataIndex): the key.

    Returns:
        the value

    Raises:
        ValueError: the key is missing, or a whole tensor is asked for at other offsets.

    Example::

        >>> from ember.distributed.checkpoint.default_planner import find_state_dict_object
        >>> from ember.distributed.checkpoint.metadata import MetadataIndex
        >>> find_state_dict_object({"step": 3}, MetadataIndex("step"))
        3
    """
    from ... import Tensor
    from ._shards import layout_of

    if index.fqn not in state_dict:
        raise ValueError(f"Could not find FQN: '{index.fqn}'")
    obj = state_dict[index.fqn]
    if (isinstance(obj, Tensor) and index.offset is not None and layout_of(obj) is None
            and any(index.offset)):
        raise ValueError(f"FQN: '{index.fqn}' is not distributed")
    return obj


def _write_item(fqn: str, value) -> WriteItem:
    from ... import Tensor
    from ._shards import layout_of

    if not isinstance(value, Tensor):
        return WriteItem(MetadataIndex(fqn), WriteItemType.BYTE_IO)
    layout = layout_of(value)
    if layout is None:
        size, offsets, kind = value.shape, [0] * value.dim(), WriteItemType.TENSOR
    else:
        (size, offsets), kind = layout, WriteItemType.SHARD
    chunk = ChunkStorageMetadata(_Size(offsets), _Size(value.shape))
    data = TensorWriteData(chunk, TensorProperties.create_from_tensor(value), _Size(size))
    return WriteItem(MetadataIndex(fqn, offsets), kind, tensor_data=data)


def create_default_local_save_plan(state_dict: dict, is_coordinator: bool) -> SavePlan:
    """One ``WriteItem`` for every entry of a flattened state dict (duplicates across ranks
    are removed by the global plan).

    Args:
        state_dict (dict): a flattened state dict.
        is_coordinator (bool): whether this rank is the coordinator (unused by the plan).

    Returns:
        SavePlan

    Example::

        >>> from ember.distributed.checkpoint.default_planner import *
        >>> [i.type.name for i in create_default_local_save_plan({"w": ember.ones(2)}, True).items]
        ['TENSOR']
    """
    return SavePlan([_write_item(fqn, v) for fqn, v in state_dict.items()])


def dedup_save_plans(all_plans: list, save_to_lowest_rank: bool = False) -> list:
    """Keep each item that several ranks plan on one of them: the lowest rank holding it
    (ember always picks the lowest; ``save_to_lowest_rank`` is accepted for PyTorch's
    signature). Shards (``WriteItemType.SHARD``) are never duplicates.

    Args:
        all_plans (list of SavePlan): one per rank.
        save_to_lowest_rank (bool): accepted for compatibility.

    Returns:
        list of SavePlan

    Example::

        >>> from ember.distributed.checkpoint.default_planner import *
        >>> p = create_default_local_save_plan({"w": ember.ones(2)}, True)
        >>> [len(q.items) for q in dedup_save_plans([p, p])]
        [1, 0]
    """
    seen, out = set(), []
    for plan in all_plans:
        keep = []
        for item in plan.items:
            if item.type == WriteItemType.SHARD:
                keep.append(item)
            elif item.index not in seen:
                seen.add(item.index)
                keep.append(item)
        out.append(dataclasses.replace(plan, items=keep))
    return out


def create_default_global_save_plan(all_plans: list, rewrite_index_hints: bool = True
                                    ) -> tuple[list, Metadata]:
    """The ``Metadata`` of every planned item: a tensor's chunks in rank order and each
    item's index hint set to its chunk's position.

    Args:
        all_plans (list of SavePlan): one per rank, already deduplicated.
        rewrite_index_hints (bool): set each item's ``index.index``. Default: True.

    Returns:
        (list of SavePlan, Metadata)

    Example::

        >>> from ember.distributed.checkpoint.default_planner import *
        >>> p = create_default_local_save_plan({"w": ember.ones(2), "s": 1}, True)
        >>> sorted(create_default_global_save_plan([p])[1].state_dict_metadata)
        ['s', 'w']
    """
    md: dict = {}
    plans = []
    for plan in all_plans:
        items = []
        for item in plan.items:
            if item.type == WriteItemType.BYTE_IO:
                md[item.index.fqn] = BytesStorageMetadata()
                items.append(item)
                continue
            data = item.tensor_data
            entry = md.setdefault(item.index.fqn, TensorStorageMetadata(
                dataclasses.replace(data.properties), data.size, []))
            if rewrite_index_hints:
                item = dataclasses.replace(item, index=MetadataIndex(
                    item.index.fqn, item.index.offset, len(entry.chunks)))
            entry.chunks.append(data.chunk)
            items.append(item)
        plans.append(dataclasses.replace(plan, items=items))
    return plans, Metadata(md)


def create_default_local_load_plan(state_dict: dict, metadata: Metadata, strict: bool = True
                                   ) -> LoadPlan:
    """``ReadItem``s filling every entry of a flattened state dict from the checkpoint.

    Args:
        state_dict (dict): the flattened state dict to fill.
        metadata (Metadata): the checkpoint's metadata.
        strict (bool): a key missing from the checkpoint raises (else it is skipped).
            Default: True.

    Returns:
        LoadPlan

    Raises:
        RuntimeError: a key is missing (``strict``), or an entry's kind differs from what
            was stored.
        ValueError: a tensor's size differs from the stored one.

    Example::

        >>> import tempfile, ember.distributed.checkpoint as dcp
        >>> from ember.distributed.checkpoint.default_planner import *
        >>> d = tempfile.mkdtemp(); md = dcp.save({"w": ember.ones(4)}, checkpoint_id=d)
        >>> [i.lengths for i in create_default_local_load_plan({"w": ember.zeros(4)}, md).items]
        [ember.Size([4])]
    """
    from ... import Tensor
    from ._shards import layout_of

    items = []
    for fqn, obj in state_dict.items():
        if fqn not in metadata.state_dict_metadata:
            if strict:
                raise RuntimeError(f"Missing key in checkpoint state_dict: {fqn}.")
            continue
        md = metadata.state_dict_metadata[fqn]
        if isinstance(md, BytesStorageMetadata):
            index = MetadataIndex(fqn)
            items.append(ReadItem(LoadItemType.BYTE_IO, index, _Size([0]), index, _Size([0]),
                                  _Size([0])))
            continue
        if not isinstance(obj, Tensor):
            raise RuntimeError(f"Invalid checkpoint metadata for {fqn}, expected "
                               f"BytesStorageMetadata but found {type(md)}")
        layout = layout_of(obj)
        size, start = layout if layout is not None else (tuple(obj.shape), (0,) * obj.dim())
        if tuple(md.size) != tuple(size):
            raise ValueError(f"Size mismatch between saved {md.size} and current: "
                             f"{obj.shape if layout is None else _Size(size)} for {fqn}")
        dest = MetadataIndex(fqn, start)
        region = [(b, b + n) for b, n in zip(start, obj.shape)]
        for i, chunk in enumerate(md.chunks):
            lo = [max(a, o) for (a, _), o in zip(region, chunk.offsets)]
            hi = [min(b, o + n) for (_, b), o, n in zip(region, chunk.offsets, chunk.sizes)]
            if any(h <= l for l, h in zip(lo, hi)):
                continue
            items.append(ReadItem(
                LoadItemType.TENSOR, dest, _Size([l - a for l, (a, _) in zip(lo, region)]),
                MetadataIndex(fqn, chunk.offsets, i),
                _Size([l - o for l, o in zip(lo, chunk.offsets)]),
                _Size([h - l for l, h in zip(lo, hi)])))
            if not region:  # a 0-d tensor is one chunk
                break
    return LoadPlan(items)


def create_default_global_load_plan(all_plans: list) -> list:
    """The global load plan: every rank reads what it planned (no change).

    Args:
        all_plans (list of LoadPlan): one per rank.

    Returns:
        list of LoadPlan

    Example::

        >>> from ember.distributed.checkpoint.default_planner import *
        >>> from ember.distributed.checkpoint import LoadPlan
        >>> create_default_global_load_plan([LoadPlan([])])
        [LoadPlan(items=[], storage_data=None, planner_data=None)]
    """
    return all_plans


class DefaultSavePlanner(SavePlanner):
    """The plan ``save`` uses by default (see the module docstring); override one method
    to change a step.

    Args:
        flatten_state_dict (bool): store nested dicts under flattened keys. Default: True.
        flatten_sharded_tensors (bool): accepted for compatibility (ember's shards are
            already flat).
        dedup_replicated_tensors (bool, optional): deprecated; ignored, as in PyTorch.
        dedup_save_to_lowest_rank (bool): accepted (ember always keeps the lowest rank's).
        enable_plan_caching (bool): accepted (ember plans every save afresh).

    Example::

        >>> import tempfile, ember.distributed.checkpoint as dcp
        >>> class Prefix(dcp.DefaultSavePlanner):
        ...     def set_up_planner(self, state_dict, storage_meta=None, is_coordinator=False):
        ...         super().set_up_planner({"foo_" + k: v for k, v in state_dict.items()},
        ...                                storage_meta, is_coordinator)
        >>> md = dcp.save({"w": ember.ones(2)}, checkpoint_id=tempfile.mkdtemp(),
        ...               planner=Prefix())
        >>> list(md.state_dict_metadata)
        ['foo_w']
    """

    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 dedup_replicated_tensors: bool | None = None,
                 dedup_save_to_lowest_rank: bool = False, enable_plan_caching: bool = False):
        self.flatten_state_dict = flatten_state_dict
        self.flatten_sharded_tensors = flatten_sharded_tensors
        self.dedup_save_to_lowest_rank = dedup_save_to_lowest_rank
        self.enable_plan_caching = enable_plan_caching
        self.mappings: dict = {}

    def set_up_planner(self, state_dict: dict, storage_meta=None,
                       is_coordinator: bool = False) -> None:
        """Flatten ``state_dict`` (when ``flatten_state_dict``) and keep it.

        Args:
            state_dict (dict): what this rank saves.
            storage_meta (StorageMeta, optional): recorded in the metadata.
            is_coordinator (bool): whether this rank makes the global plan.
        """
        from ._shards import local_pieces

        if self.flatten_state_dict:
            state_dict, self.mappings = flatten_state_dict(state_dict)
        self.state_dict = local_pieces(state_dict)  # DTensors as their pieces
        self.storage_meta = storage_meta
        self.is_coordinator = is_coordinator

    def create_local_plan(self) -> SavePlan:
        """One item per entry; the flattened keys' paths ride along as planner data.

        Returns:
            SavePlan
        """
        plan = create_default_local_save_plan(self.state_dict, self.is_coordinator)
        if self.flatten_state_dict:
            plan = dataclasses.replace(plan, planner_data=self.mappings)
        self.plan = plan
        return plan

    def create_global_plan(self, all_plans: list) -> tuple[list, Metadata]:
        """Deduplicate, then record every item in the metadata (with the merged paths of
        the flattened keys as its ``planner_data``).

        Args:
            all_plans (list of SavePlan): one per rank.

        Returns:
            (list of SavePlan, Metadata)
        """
        all_plans = dedup_save_plans(all_plans, self.dedup_save_to_lowest_rank)
        plans, metadata = create_default_global_save_plan(all_plans)
        if self.flatten_state_dict:
            merged = dict(collections.ChainMap(*(p.planner_data for p in plans)))
            metadata = dataclasses.replace(metadata, planner_data=merged)
        metadata = dataclasses.replace(metadata, storage_meta=self.storage_meta)
        self.global_plan, self.metadata = plans, metadata
        return plans, metadata

    def finish_plan(self, new_plan: SavePlan) -> SavePlan:
        """Keep the coordinator's plan for this rank.

        Args:
            new_plan (SavePlan): this rank's final plan.

        Returns:
            SavePlan
        """
        self.plan = new_plan
        return new_plan

    def resolve_data(self, write_item: WriteItem):
        """The value of ``write_item``: ``transform_object(item, lookup_object(index))``.

        Args:
            write_item (WriteItem): an item of this rank's plan.

        Returns:
            Tensor or io.BytesIO
        """
        return self.transform_object(write_item, self.lookup_object(write_item.index))

    def lookup_object(self, index: MetadataIndex):
        """The state-dict value ``index`` names.

        Args:
            index (MetadataIndex): the key.

        Returns:
            the value
        """
        return find_state_dict_object(self.state_dict, index)

    def transform_object(self, write_item: WriteItem, object):  # noqa: A002 -- PyTorch's name
        """A non-tensor value pickled into a ``BytesIO``; a tensor as it is.

        Args:
            write_item (WriteItem): the item.
            object: its value.

        Returns:
            Tensor or io.BytesIO
        """
        if write_item.type == WriteItemType.BYTE_IO:
            from ... import save

            buf = io.BytesIO()
            save(object, buf)
            buf.seek(0)
            return buf
        return object


class DefaultLoadPlanner(LoadPlanner):
    """The plan ``load`` uses by default (see the module docstring); override one method
    to change a step.

    Args:
        flatten_state_dict (bool): the checkpoint stores nested dicts under flattened
            keys. Default: True.
        flatten_sharded_tensors (bool): accepted for compatibility.
        allow_partial_load (bool): skip keys the checkpoint lacks instead of raising.
            Default: False.

    Example::

        >>> import tempfile, ember.distributed.checkpoint as dcp
        >>> d = tempfile.mkdtemp(); _ = dcp.save({"w": ember.ones(2)}, checkpoint_id=d)
        >>> sd = {"w": ember.zeros(2), "new": ember.zeros(1)}
        >>> dcp.load(sd, checkpoint_id=d,
        ...          planner=dcp.DefaultLoadPlanner(allow_partial_load=True)); sd["w"]
        tensor([1., 1.])
    """

    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 allow_partial_load: bool = False):
        self.flatten_state_dict = flatten_state_dict
        self.flatten_sharded_tensors = flatten_sharded_tensors
        self.allow_partial_load = allow_partial_load
        self.original_state_dict: dict = {}
        self.mappings: dict = {}

    def set_up_planner(self, state_dict: dict, metadata: Metadata | None = None,
                       is_coordinator: bool = False) -> None:
        """Keep ``state_dict`` (filled in place) and its flattened form.

        Args:
            state_dict (dict): what this rank fills.
            metadata (Metadata, optional): the checkpoint's metadata.
            is_coordinator (bool): whether this rank makes the global plan.
        """
        from ._shards import local_pieces

        self.original_state_dict = state_dict
        if self.flatten_state_dict:
            state_dict, self.mappings = flatten_state_dict(state_dict)
        self.state_dict = local_pieces(state_dict)  # DTensors as their pieces
        self.metadata = metadata
        self.is_coordinator = is_coordinator

    def create_local_plan(self) -> LoadPlan:
        """Reads for every entry (see ``create_default_local_load_plan``).

        Returns:
            LoadPlan
        """
        return create_default_local_load_plan(self.state_dict, self.metadata,
                                              not self.allow_partial_load)

    def create_global_plan(self, global_plan: list) -> list:
        """Every rank's plan unchanged.

        Args:
            global_plan (list of LoadPlan): one per rank.

        Returns:
            list of LoadPlan
        """
        return create_default_global_load_plan(global_plan)

    def finish_plan(self, new_plan: LoadPlan) -> LoadPlan:
        """This rank's plan unchanged.

        Args:
            new_plan (LoadPlan): the coordinator's plan for this rank.

        Returns:
            LoadPlan
        """
        return new_plan

    def load_bytes(self, read_item: ReadItem, value: io.BytesIO) -> None:
        """Unpickle a stored value into the state dict (at its nested place).

        Args:
            read_item (ReadItem): which entry.
            value (io.BytesIO): the stored bytes.
        """
        from ... import load

        obj = load(value, map_location="cpu", weights_only=False)
        fqn = read_item.dest_index.fqn
        if self.flatten_state_dict:
            set_element(self.original_state_dict, self.mappings[fqn], obj)
        else:
            self.state_dict[fqn] = obj

    def resolve_tensor(self, read_item: ReadItem):
        """The part of the entry's tensor the piece fills.

        Args:
            read_item (ReadItem): which piece.

        Returns:
            Tensor
        """
        return self.transform_tensor(read_item, self.lookup_tensor(read_item.dest_index))

    def commit_tensor(self, read_item: ReadItem, tensor) -> None:
        """Nothing to do: the piece was copied into the state dict's own tensor.

        Args:
            read_item (ReadItem): which piece.
            tensor (Tensor): the filled tensor.
        """

    def lookup_tensor(self, index: MetadataIndex):
        """The state dict's tensor ``index`` names.

        Args:
            index (MetadataIndex): the key.

        Returns:
            Tensor
        """
        return self.state_dict[index.fqn]

    def transform_tensor(self, read_item: ReadItem, tensor):
        """``tensor`` narrowed to the piece ``read_item`` fills.

        Args:
            read_item (ReadItem): which piece.
            tensor (Tensor): the entry's tensor.

        Returns:
            Tensor: a view.
        """
        return narrow_tensor_by_index(tensor, read_item.dest_offsets, read_item.lengths)
