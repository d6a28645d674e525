"""Converting between a distributed checkpoint (a directory ``dcp.save`` writes) and one
``ember.save`` file (``torch.distributed.checkpoint.format_utils``).

Example::

    >>> import os, tempfile
    >>> import ember.distributed.checkpoint as dcp
    >>> from ember.distributed.checkpoint.format_utils import dcp_to_torch_save
    >>> d = tempfile.mkdtemp()
    >>> _ = dcp.save({"model": {"w": ember.ones(2)}}, checkpoint_id=d, no_dist=True)
    >>> dcp_to_torch_save(d, os.path.join(d, "model.pt"))
    >>> ember.load(os.path.join(d, "model.pt"))
    {'model': {'w': tensor([1., 1.])}}
"""

from __future__ import annotations

__all__ = ["dcp_to_torch_save", "torch_save_to_dcp"]


def _template(metadata):
    """A flat state dict holding an empty tensor of the stored size and dtype for every
    stored tensor (and None for every stored object), keyed as the checkpoint is."""
    import ember

    from .metadata import TensorStorageMetadata

    out = {}
    for key, md in metadata.state_dict_metadata.items():
        if isinstance(md, TensorStorageMetadata):
            out[key] = ember.empty(tuple(md.size), dtype=md.properties.dtype)
        else:
            out[key] = None
    return out


def _nest(flat, planner_data):
    """The nested state dict the flat keys came from (``planner_data`` gives each key's
    path of dict keys and list indices)."""
    if not planner_data:
        return flat
    root: dict = {}
    for key, value in flat.items():
        path = planner_data.get(key, (key,))
        node = root
        for i, part in enumerate(path[:-1]):
            nxt = path[i + 1]
            if isinstance(node, list):
                while len(node) <= part:
                    node.append(None)
                if node[part] is None:
                    node[part] = [] if isinstance(nxt, int) else {}
                node = node[part]
            else:
                node = node.setdefault(part, [] if isinstance(nxt, int) else {})
        last = path[-1]
        if isinstance(node, list):
            while len(node) <= last:
                node.append(None)
            node[last] = value
        else:
            node[last] = value
    return root


def dcp_to_torch_save(dcp_checkpoint_dir, torch_save_path) -> None:
    """Read a whole distributed checkpoint in this process and write it as one file.

    Args:
        dcp_checkpoint_dir (str or os.PathLike): the checkpoint directory.
        torch_save_path (str or os.PathLike): the file to write (``ember.save``'s format,
            which ``torch.load`` also reads).

    Returns:
        None.

    Example::

        >>> # dcp_to_torch_save("ckpt/step_100", "model.pt")
    """
    import ember

    from .filesystem import FileSystemReader
    from .state_dict_loader import load

    reader = FileSystemReader(dcp_checkpoint_dir)
    metadata = reader.read_metadata()
    flat = _template(metadata)
    load(flat, storage_reader=reader, no_dist=True)
    ember.save(_nest(flat, metadata.planner_data), torch_save_path)


def torch_save_to_dcp(torch_save_path, dcp_checkpoint_dir) -> None:
    """Write the state dict of one ``ember.save`` (or ``torch.save``) file as a distributed
    checkpoint.

    Args:
        torch_save_path (str or os.PathLike): the file.
        dcp_checkpoint_dir (str or os.PathLike): the checkpoint directory to write.

    Returns:
        None.

    Example::

        >>> # torch_save_to_dcp("model.pt", "ckpt/converted")
    """
    import ember

    from .state_dict_saver import save

    state_dict = ember.load(torch_save_path, weights_only=False)
    save(state_dict, checkpoint_id=dcp_checkpoint_dir, no_dist=True)
