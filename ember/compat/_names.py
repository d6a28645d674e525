"""What ember's classes are called while it runs as ``torch`` (NOTE [ Class names under the
alias ]).

NOTE [ Class names under the alias ]
Programs print classes: ``print(type(model.fc))``, ``type(x).__module__``, an exception's
class in a traceback, ``isinstance`` messages, pickled class paths. Under PyTorch they read
``torch.nn.modules.linear.Linear``; ember's classes live at ``ember.nn.modules.linear.Linear``.
While the alias is installed (``ember.compat.install()``, ``python -m ember.compat.run``)
every class defined in ember takes, as its ``__module__``, the torch module PyTorch defines
it in, so the program prints exactly what it prints under PyTorch.

The rename is sound because each presented name leads back to the very same class:
- the default is the same path under ``torch`` (``ember.optim.sgd`` -> ``torch.optim.sgd``),
  which the import hook resolves to the ember module itself;
- where ember keeps a class elsewhere than PyTorch (``BatchNorm2d`` in ``normalization``),
  ``_HOMES`` names PyTorch's module, and that name is taken only if the ember module behind
  it holds the same object (ember keeps PyTorch's module layout as re-exports);
- each renamed module is also entered in ``sys.modules`` under its torch name, so whatever
  looks a class's module up there (``inspect.getsource``, ``help``, ``typing.get_type_hints``)
  finds it.
So ``pickle`` and ``torch.save`` of whole models write PyTorch's class paths, which load back
under the alias, in ember without it (``ember.load`` maps ``torch.*`` paths: NOTE [ Loading
PyTorch's classes ]), and name the classes PyTorch itself has there. ``copy`` never looks
names up. Backward nodes take no module (PyTorch's are C types: ``<class 'MulBackward0'>``).

Modules ember imports after the alias is installed (lazily, inside its functions) are renamed
as they load: ``watcher`` wraps the loader of every ``ember.*`` module. ``uninstall()`` gives
every class its own name back. Code inside ember that recognises its own classes must
therefore not test ``__module__`` for ``"ember"`` alone.
"""

from __future__ import annotations

import importlib.abc
import sys

__all__ = ["WrappingFinder", "WrappingLoader", "present", "restore", "watcher"]

# ember module, then PyTorch's module for the classes named after it (where it is not the
# ember module's own path under ``torch``); generated from PyTorch 2.13's ``__module__``s
_HOMES_TEXT = """
ember torch._C: Generator
ember._core.storage torch.storage: TypedStorage UntypedStorage
ember._core.stream torch: AcceleratorError Event Stream
ember._core.tag torch: Tag
ember._library.registration torch.library: Library
ember._overrides torch._C: DisableTorchFunction DisableTorchFunctionSubclass
ember._top_level torch: FatalError SymBool SymFloat SymInt
ember.ao._qscheme torch: qscheme
ember.autograd._base torch.utils.hooks: RemovableHandle
ember.autograd._profiler_events torch.autograd.profiler_util: FunctionEvent MemRecordsAcc
ember.cuda torch: OutOfMemoryError
ember.cuda._device_api torch.cuda: CudaError DeferredCudaCallError cudaStatus
ember.cuda.streams torch.cuda: StreamContext
ember.distributed._collectives torch.distributed.distributed_c10d: P2POp ReduceOp
ember.distributed._extras torch.distributed: DistNetworkError
ember.distributed._extras torch.distributed.device_mesh: DeviceMesh
ember.distributed._extras torch.distributed.distributed_c10d: AllToAllOptions
    AllreduceCoalescedOptions AllreduceOptions BackendConfig BarrierOptions BroadcastOptions
    GatherOptions ProcessGroupGloo ReduceOptions ReduceScatterOptions ScatterOptions
ember.distributed._group torch.distributed: DistBackendError
ember.distributed._group torch.distributed.distributed_c10d: Backend GroupMember
    ProcessGroup Work group
ember.distributed._store._base torch.distributed: DistError DistStoreError QueueEmptyError
ember.distributions._transform torch.distributions.transforms: CatTransform ComposeTransform
    IndependentTransform ReshapeTransform StackTransform Transform _InverseTransform
ember.futures torch: Future
ember.fx._codegen torch.fx.graph: CodeGen
ember.jit._containers torch: ScriptDict ScriptDictIterator ScriptDictKeyIterator ScriptList
    ScriptListIterator
ember.jit._logging torch: AggregationType LockingLogger NoopLogger
ember.jit._schema torch: Argument FunctionSchema
ember.jit._types torch: AwaitType DictType EnumType FutureType InferredType ListType
    OptionalType RRefType TensorType TupleType Type UnionType
ember.nn.modules.lazy torch.nn.modules.batchnorm: LazyBatchNorm1d LazyBatchNorm2d
    LazyBatchNorm3d
ember.nn.modules.lazy torch.nn.modules.conv: LazyConv1d LazyConv2d LazyConv3d
    LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d
ember.nn.modules.lazy torch.nn.modules.instancenorm: LazyInstanceNorm1d LazyInstanceNorm2d
    LazyInstanceNorm3d
ember.nn.modules.lazy torch.nn.modules.linear: LazyLinear
ember.nn.modules.loss torch.nn.modules.distance: CosineSimilarity PairwiseDistance
ember.nn.modules.normalization torch.nn.modules.batchnorm: BatchNorm1d BatchNorm2d
    BatchNorm3d SyncBatchNorm
ember.nn.modules.normalization torch.nn.modules.instancenorm: InstanceNorm1d InstanceNorm2d
    InstanceNorm3d
ember.nn.modules.sampling torch.nn.modules.channelshuffle: ChannelShuffle
ember.nn.modules.sampling torch.nn.modules.fold: Fold Unfold
ember.nn.modules.sampling torch.nn.modules.pixelshuffle: PixelShuffle PixelUnshuffle
ember.nn.modules.sampling torch.nn.modules.upsampling: Upsample UpsamplingBilinear2d
    UpsamplingNearest2d
ember.nn.modules.transformer torch.nn.modules.activation: MultiheadAttention
ember.onnx._exporter torch.onnx: ONNXProgram
ember.onnx.errors torch.onnx: OnnxExporterError
ember.optim.adafactor torch.optim: Adafactor
ember.optim.adam torch.optim.adamw: AdamW
ember.optim.muon torch.optim: Muon
ember.profiler.profiler torch.autograd.profiler: KinetoStepTracker
ember.profiler.record_function torch.autograd.profiler: record_function
ember.serialization._config torch.serialization: LoadEndianness set_default_mmap_options
    skip_data
ember.serialization._file_io torch: PyTorchFileReader PyTorchFileWriter
ember.serialization._rebuild torch.serialization: StorageType
ember.serialization._unpickle torch.serialization: safe_globals
ember.testing._file_check torch: FileCheck
ember.utils.data.sampler torch.utils.data.distributed: DistributedSampler
ember.utils.throughput_benchmark torch: BenchmarkConfig BenchmarkExecutionStats
    ThroughputBenchmark
"""


def _parse_homes(text):
    homes, key = {}, None
    for line in text.splitlines():
        if not line.strip():
            continue
        if line[0].isspace():
            names = line.split()
        else:
            head, _, rest = line.partition(":")
            key = tuple(head.split())
            names = rest.split()
        for name in names:
            homes[(key[0], name)] = key[1]
    return homes


_HOMES = _parse_homes(_HOMES_TEXT)

_active = [False]
_own_module: dict = {}  # renamed class -> its own ``__module__``
_done: set = set()      # ember modules already swept


def _torch_name(name):
    return "torch" + name[len("ember"):]


def _holds(torch_module, qualname, cls):
    """Whether ``torch_module``, as the alias resolves it, holds ``cls`` as ``qualname``."""
    from . import _ember_name

    module = sys.modules.get(torch_module) or sys.modules.get(_ember_name(torch_module))
    if module is None:
        try:
            module = importlib.import_module(_ember_name(torch_module))
        except ImportError:
            return False
    return getattr(module, qualname, None) is cls


def _rename(cls, own):
    home = _HOMES.get((own, cls.__qualname__))
    if home is None or not _holds(home, cls.__qualname__, cls):
        home = _torch_name(own)
    _own_module[cls] = own
    cls.__module__ = home


def _is_ember(name):
    return isinstance(name, str) and (name == "ember" or name.startswith("ember."))


def _present_module(module):
    from . import _ember_name

    name = module.__name__
    if name in _done:
        return
    _done.add(name)
    torch_name = _torch_name(name)
    if _ember_name(torch_name) == name:
        sys.modules.setdefault(torch_name, module)
    for obj in list(vars(module).values()):
        if isinstance(obj, type) and obj not in _own_module:
            own = obj.__dict__.get("__module__")
            if _is_ember(own):
                _rename(obj, own)


def _present_nodes(module_name):
    from ..autograd import _nodes

    _nodes.node_module[0] = module_name
    for table in (_nodes._node_classes, _nodes._named_classes):
        for cls in table.values():
            cls.__module__ = module_name


def present():
    """Give every loaded ember class its PyTorch name, and the backward nodes none."""
    _active[0] = True
    for name in sorted(n for n in list(sys.modules) if _is_ember(n)):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__name__", None) == name:
            _present_module(module)
    _present_nodes("builtins")


def restore():
    """Give every renamed class its own ``__module__`` back."""
    _active[0] = False
    for cls, own in _own_module.items():
        cls.__module__ = own
    _own_module.clear()
    _done.clear()
    _present_nodes("ember.autograd._nodes")


class WrappingLoader(importlib.abc.Loader):
    """A module's own loader, wrapped: subclasses run it in ``exec_module`` and do their part
    around it; everything else is the wrapped loader's."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)

    def __getattr__(self, name):  # get_source, get_resource_reader, ...
        return getattr(self._loader, name)


class _Presenting(WrappingLoader):
    """Runs an ember module's own loader, then renames the classes the module defined."""

    def exec_module(self, module):
        self._loader.exec_module(module)
        if _active[0]:
            _present_module(module)


class WrappingFinder(importlib.abc.MetaPathFinder):
    """Finds the modules ``wants`` accepts through the other finders and wraps their loaders
    in ``wrap`` (a ``WrappingLoader`` class)."""

    def __init__(self, wants, wrap):
        self._wants, self._wrap = wants, wrap
        self._busy = set()

    def find_spec(self, fullname, path=None, target=None):
        if not self._wants(fullname) or fullname in self._busy:
            return None
        self._busy.add(fullname)
        try:
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._busy.discard(fullname)
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = self._wrap(spec.loader)
        return spec


# finds ``ember.*`` modules and renames the classes they define as they load
watcher = WrappingFinder(lambda name: name.startswith("ember."), _Presenting)
