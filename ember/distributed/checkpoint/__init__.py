"""``ember.distributed.checkpoint``: save and load state dicts from every rank at once, as
``torch.distributed.checkpoint`` (DCP).

``save(state_dict, checkpoint_id=dir)`` writes one file per rank and a ``.metadata`` file;
``load(state_dict, checkpoint_id=dir)`` fills a state dict in place. The directory has
PyTorch's layout, so checkpoints move between ember and PyTorch in both directions (NOTE
[ DCP on disk ] in ``filesystem.py``). What is written and read is decided by a planner
(NOTE [ Checkpoint planners ] in ``planner.py``); ``state_dict.get_state_dict`` and friends
give models and optimizers state dicts keyed by parameter names.

Example::

    >>> import tempfile, ember.distributed.checkpoint as dcp
    >>> d = tempfile.mkdtemp()
    >>> _ = dcp.save({"model": {"w": ember.ones(2)}, "epoch": 3}, checkpoint_id=d)
    >>> sd = {"model": {"w": ember.zeros(2)}, "epoch": 0}
    >>> dcp.load(sd, checkpoint_id=d); sd["epoch"]
    3
"""

from . import default_planner, planner, stateful, storage
from .api import CheckpointException
from .default_planner import DefaultLoadPlanner, DefaultSavePlanner
from .filesystem import FileSystemReader, FileSystemWriter
from .metadata import (BytesStorageMetadata, ChunkStorageMetadata, Metadata, MetadataIndex,
                       TensorProperties, TensorStorageMetadata)
from .state_dict_loader import load, load_state_dict
from .planner import LoadPlan, LoadPlanner, ReadItem, SavePlan, SavePlanner, WriteItem
from .state_dict_saver import async_save, save, save_state_dict
from .storage import StorageReader, StorageWriter

__all__ = ["BytesStorageMetadata", "CheckpointException", "ChunkStorageMetadata",
           "DefaultLoadPlanner", "DefaultSavePlanner", "FileSystemReader", "FileSystemWriter",
           "LoadPlan", "LoadPlanner", "Metadata", "MetadataIndex", "ReadItem", "SavePlan",
           "SavePlanner", "StorageReader", "StorageWriter", "TensorProperties",
           "TensorStorageMetadata", "WriteItem",
           "async_save", "load", "load_state_dict", "save", "save_state_dict"]
