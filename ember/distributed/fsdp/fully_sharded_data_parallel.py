"""PyTorch's first FSDP API: the module wrapper ``FullyShardedDataParallel`` (FSDP1).

(Over 1,000 lines because PyTorch puts the whole API, state dicts and optimizer-state
conversions included, on this one class, and all of it reads the ``_Flat`` layout; the
optimizer-state static methods are the part to move to a module of their own next.)

NOTE [ FSDP1 on fully_shard's gathers ]
A unit (the wrapped module minus the units inside it) keeps its parameters as flat 1-D
tensors cut in rows across the ranks, exactly as ``fully_shard`` cuts a parameter (NOTE
[ fully_shard ] in ``_fully_shard.py``): the same ``_ParamInfo`` gathers a flat shard whole
through the same autograd function, whose backward reduce-scatters the gradient (averaged)
into the shard's ``.grad``, and waits when gradient sync is off (``no_sync``). Without
``use_orig_params`` all of a unit's parameters are concatenated into one flat parameter,
``<wrapped>._flat_param``, and the original names become plain tensor attributes that the
forward fills with views of the gathered flat tensor; with ``use_orig_params`` each
parameter keeps its name and is its own flat shard. ``NO_SHARD`` keeps every flat tensor
whole and all-reduces its gradient. The forward of a unit gathers, runs the wrapped module
and puts the shards back; backward reads the gathered tensors the forward saved, so every
strategy computes the same numbers and differs only in what PyTorch keeps in memory.
State dicts and optimizer state dicts gather or cut these flat tensors by the same rows.

NOTE [ Tied parameters in a unit ]
A parameter reached under two names in one unit (an embedding tied to the output layer) is
flattened once, under its first name in ``named_modules`` order; each further name is an
alias that receives the very same view (or shard, with ``use_orig_params``), so both uses
feed one gradient and the weights stay tied after a step, as PyTorch keeps them.
``named_parameters`` lists it once; state dicts list every name, as the unwrapped model's.

NOTE [ FSDP1 communication hooks ]
``register_comm_hook(state, hook)`` on the root hands every unit's gradient reduction to
``hook``: under ``NO_SHARD`` ``hook(state, grad)`` must leave the reduced gradient in
``grad``; sharded, ``hook(state, grad, output)`` gets the whole flat gradient padded to a
multiple of the world size and must write this rank's reduced rows into ``output``. The
default hooks (``algorithms._comm_hooks``) divide before and after the sum as PyTorch does.

Example::

    >>> from ember.distributed.fsdp import FullyShardedDataParallel
    >>> isinstance(ember.nn.Linear(2, 2), FullyShardedDataParallel)
    False
"""

from __future__ import annotations

import contextlib

from ...nn.modules.module import Module
from ._fully_shard import _Gather, _ParamInfo
from .api import (FullOptimStateDictConfig, FullStateDictConfig, LocalStateDictConfig,
                  ShardedStateDictConfig, ShardingStrategy, StateDictSettings, StateDictType)
# scripts import these from this module too (accelerate does), as PyTorch's module has them
from .api import (BackwardPrefetch, CPUOffload, MixedPrecision,  # noqa: F401
                  OptimStateKeyType)

__all__ = ["FullyShardedDataParallel"]

FSDP_WRAPPED_MODULE = "_fsdp_wrapped_module"
FLAT_PARAM = "_flat_param"

_DEFAULT_CONFIGS = {StateDictType.FULL_STATE_DICT: FullStateDictConfig,
                    StateDictType.SHARDED_STATE_DICT: ShardedStateDictConfig,
                    StateDictType.LOCAL_STATE_DICT: LocalStateDictConfig}


def _clean(name: str) -> str:
    """A parameter's name as the unwrapped model spells it."""
    return ".".join(p for p in name.split(".") if p != FSDP_WRAPPED_MODULE)


class _ReplicaInfo(_ParamInfo):
    """A flat tensor under ``NO_SHARD``: every rank holds it whole; gradients all-reduced."""

    def local_rows(self, r):
        return 0, self.rows

    def gather(self, shard, for_forward=False):
        full = shard.detach().clone()
        mp = self.state.mp_policy
        if for_forward and mp is not None and mp.param_dtype is not None:
            full = full.to(mp.param_dtype)
        return full

    def scatter_grad(self, grad):
        from ... import distributed as dist

        mp = self.state.mp_policy
        if mp is not None and mp.param_dtype is not None:
            grad = grad.to(mp.reduce_dtype or mp.param_dtype)
        if self.pending is not None:
            grad = grad + self.pending
            self.pending = None
        if not self.state.sync:
            self.pending = grad.detach().clone()
            return None
        grad = grad.contiguous().clone()
        if self.state.comm_hook is not None:  # NOTE [ FSDP1 communication hooks ]
            self.state.comm_hook(self.state.comm_hook_state, grad)
        else:
            dist.all_reduce(grad, op=dist.ReduceOp.AVG, group=self.group)
        return grad.to(self.dtype)


class _Flat:
    """One flat tensor of a unit: its ``info``, the parameters it holds as ``entries``
    ``(owner, name, shape, offset, numel, requires_grad)`` and where its shard is registered
    (``home``, ``home_name``)."""

    def __init__(self, info, entries, home, home_name, aliases=()):
        self.info, self.entries = info, entries
        self.home, self.home_name = home, home_name
        # (owner, name, entry index): further names of an entry's parameter (tied weights)
        self.aliases = list(aliases)

    @property
    def shard(self):
        return self.home._parameters[self.home_name]

    def views(self, full):
        flat = full.reshape(-1)
        return [flat[off:off + n].view(shape) for _, _, shape, off, n, _ in self.entries]

    def cut(self, full):
        """This rank's rows of a whole flat tensor, shaped as its shard."""
        if isinstance(self.info, _ReplicaInfo):
            return full.reshape(self.shard_shape).clone()
        lo, hi = self.info.local_rows(self.info.rank)
        return full.reshape(-1)[lo:hi].clone().reshape(self.shard_shape)


class _UnitState:
    """What ``_ParamInfo`` reads from its unit: mixed precision, sync, the divisor."""

    def __init__(self, mp_policy):
        self.mp_policy = mp_policy
        self.sync = True
        self.divide_factor = None
        self.comm_hook = None  # NOTE [ FSDP1 communication hooks ]
        self.comm_hook_state = None


class FullyShardedDataParallel(Module):
    """Shard a module's parameters, gradients and optimizer state across the ranks
    (PyTorch's FSDP1; see NOTE [ FSDP1 on fully_shard's gathers ]).

    Args:
        module (Module): the module to wrap.
        process_group: the group (default: the default group); a ``(intra, inter)`` pair
            for ``HYBRID_SHARD`` takes the first.
        sharding_strategy (ShardingStrategy): default ``FULL_SHARD`` (``NO_SHARD`` on one
            rank, as PyTorch switches).
        cpu_offload (CPUOffload): accepted (CPU shards already live on the CPU).
        auto_wrap_policy: a callable ``(module, recurse, nonwrapped_numel) -> bool``, a
            ``ModuleWrapPolicy`` or ``CustomPolicy``, or a set of module classes: the
            submodules it picks become units of their own, innermost first.
        backward_prefetch (BackwardPrefetch): accepted.
        mixed_precision (MixedPrecision): gather parameters in ``param_dtype``, reduce
            gradients in ``reduce_dtype``; shards and gradients keep their dtype.
        ignored_modules: modules whose parameters are left whole and unsynchronized.
        param_init_fn: called on modules with parameters on the meta device.
        device_id: the device to move the module to first (an int is a CUDA index).
        sync_module_states (bool): start every rank from rank 0's parameters and buffers.
        forward_prefetch, limit_all_gathers: accepted.
        use_orig_params (bool): keep each parameter's name (a flat shard each) instead of
            one ``_flat_param`` per unit.
        ignored_states: parameters or modules to leave alone, as ``ignored_modules``.
        device_mesh: a 1-D ``DeviceMesh`` to shard over instead of ``process_group``.

    Returns:
        the wrapper, a ``Module`` whose ``module`` is the wrapped module.

    Raises:
        ValueError: no process group is initialized.

    Example::

        >>> from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
        >>> from ember.distributed.fsdp.wrap import ModuleWrapPolicy
        >>> model = FSDP(net, auto_wrap_policy=ModuleWrapPolicy({Block}))  # doctest: +SKIP
        >>> loss = model(x).sum(); loss.backward()  # doctest: +SKIP
    """

    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None,
                 auto_wrap_policy=None, backward_prefetch=None, mixed_precision=None,
                 ignored_modules=None, param_init_fn=None, device_id=None,
                 sync_module_states=False, forward_prefetch=False, limit_all_gathers=True,
                 use_orig_params=False, ignored_states=None, device_mesh=None):
        from ... import distributed as dist
        from .wrap import CustomPolicy, ModuleWrapPolicy

        if not dist.is_initialized():
            raise ValueError(dist.NOT_INITIALIZED)
        super().__init__()
        if isinstance(process_group, (tuple, list)):
            process_group = process_group[0]
        if device_mesh is not None:
            process_group = device_mesh.get_group()
        group = process_group if process_group is not None else dist.group.WORLD
        rank, size = dist.get_rank(group), dist.get_world_size(group)
        strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        if size == 1:
            strategy = ShardingStrategy.NO_SHARD  # PyTorch's choice on one rank
        self.process_group = group
        self.rank, self.world_size = rank, size
        self.sharding_strategy = strategy
        self.cpu_offload, self.backward_prefetch = cpu_offload, backward_prefetch
        self.mixed_precision = mixed_precision
        self.forward_prefetch, self.limit_all_gathers = forward_prefetch, limit_all_gathers
        self.use_orig_params = bool(use_orig_params)
        self._is_root = None  # decided at the first forward or state_dict call
        self._in_summon = False
        self._state_dict_type = StateDictType.FULL_STATE_DICT
        self._state_dict_config = FullStateDictConfig()
        self._optim_state_dict_config = FullOptimStateDictConfig()
        if device_id is not None:
            from ... import device as make_device

            dev = make_device("cuda", device_id) if isinstance(device_id, int) \
                else make_device(device_id)
            if dev.type != "cpu":
                module = module.to(dev)
        ignored = _ignored_ids(ignored_modules, ignored_states)
        if isinstance(auto_wrap_policy, (set, frozenset, list, tuple)):
            auto_wrap_policy = ModuleWrapPolicy(auto_wrap_policy)
        if auto_wrap_policy is not None:
            kwargs = dict(process_group=process_group, sharding_strategy=sharding_strategy,
                          cpu_offload=cpu_offload, backward_prefetch=backward_prefetch,
                          mixed_precision=mixed_precision, ignored_modules=ignored_modules,
                          param_init_fn=param_init_fn, sync_module_states=sync_module_states,
                          forward_prefetch=forward_prefetch, limit_all_gathers=limit_all_gathers,
                          use_orig_params=use_orig_params, ignored_states=ignored_states)
            overrides = auto_wrap_policy.overrides if isinstance(auto_wrap_policy,
                                                                 CustomPolicy) else None
            _auto_wrap(module, auto_wrap_policy, kwargs, ignored, overrides)
        if param_init_fn is not None:
            for m in _unit_modules(module):
                if any(p.device.type == "meta" for p in m._parameters.values() if p is not None):
                    param_init_fn(m)
        self.add_module(FSDP_WRAPPED_MODULE, module)
        self._unit = _UnitState(mixed_precision)
        self._flats = self._shard(module, ignored, sync_module_states)
        for unit in FullyShardedDataParallel.fsdp_modules(module):
            unit._is_root = False  # inside this one

    # -- construction ---------------------------------------------------------------------------

    def _shard(self, module, ignored, sync_module_states):
        from ... import cat, distributed as dist, empty
        from ...nn import Parameter

        # a parameter reached under several names (tied weights) is flattened once; its
        # other names become aliases of the same view (NOTE [ Tied parameters in a unit ])
        owned, tied, seen = [], [], {}
        for owner in _unit_modules(module):
            for name, p in owner._parameters.items():
                if p is None or id(p) in ignored or id(owner) in ignored:
                    continue
                if id(p) in seen:
                    tied.append((owner, name, id(p)))
                else:
                    seen[id(p)] = len(owned)
                    owned.append((owner, name, p))
        if sync_module_states:
            src = dist.get_global_rank(self.process_group, 0)
            for owner in _unit_modules(module):
                for b in owner._buffers.values():
                    if b is not None:
                        dist.broadcast(b.detach(), src=src, group=self.process_group)
        groups = [[o] for o in owned] if self.use_orig_params else ([owned] if owned else [])
        cls = _ReplicaInfo if self.sharding_strategy is ShardingStrategy.NO_SHARD \
            else _ParamInfo
        flats = []
        for members in groups:
            entries, off = [], 0
            for owner, name, p in members:
                entries.append((owner, name, tuple(p.shape), off, p.numel(), p.requires_grad))
                off += p.numel()
            full = cat([p.detach().reshape(-1) for _, _, p in members]).clone()
            if sync_module_states:
                dist.broadcast(full, src=dist.get_global_rank(self.process_group, 0),
                               group=self.process_group)
            if self.use_orig_params and cls is _ReplicaInfo:
                full = full.reshape(entries[0][2])  # whole and unflattened, as PyTorch's
            info = cls(None, None, full, self.process_group, self.rank, self.world_size)
            info.state = self._unit
            lo, hi = info.local_rows(self.rank)
            shard = Parameter(full[lo:hi].clone() if cls is _ParamInfo else full,
                              requires_grad=any(e[-1] for e in entries))
            shard._fsdp_flat = True
            index = {id(p): i for i, (_, _, p) in enumerate(members)}
            aliases = [(o, n, index[pid]) for o, n, pid in tied if pid in index]
            if self.use_orig_params:
                owner, name, _ = members[0]
                home, home_name = owner, name
                for o, n in [(owner, name)] + [(o, n) for o, n, _ in aliases]:
                    o._parameters[n] = shard
            else:
                for owner, name, p in members + [(o, n, members[i][2]) for o, n, i in aliases]:
                    del owner._parameters[name]
                    owner.__dict__[name] = empty((0,), dtype=p.dtype)
                home, home_name = module, FLAT_PARAM
                module.register_parameter(FLAT_PARAM, shard)
            flats.append(_Flat(info, entries, home, home_name, aliases))
            flats[-1].shard_shape = tuple(shard.shape)
        return flats

    # -- forward --------------------------------------------------------------------------------

    @property
    def module(self):
        """The wrapped module.

        Returns:
            Module: what was passed to the constructor.

        Example::

            >>> FSDP(net).module is net  # doctest: +SKIP
            True
        """
        return self._modules[FSDP_WRAPPED_MODULE]

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            wrapped = self.__dict__.get("_modules", {}).get(FSDP_WRAPPED_MODULE)
            if wrapped is None:
                raise
            return getattr(wrapped, name)

    def __getitem__(self, key):
        return self.module.__getitem__(key)

    def _place(self, fulls, as_parameters=False):
        from ...nn import Parameter

        for flat, full in zip(self._flats, fulls):
            views = flat.views(full)
            if as_parameters:
                views = [Parameter(v, requires_grad=e[-1]) for e, v in zip(flat.entries, views)]
            places = [(e[0], e[1], i) for i, e in enumerate(flat.entries)] + flat.aliases
            for owner, name, i in places:
                if as_parameters:
                    owner.__dict__.pop(name, None)
                    owner._parameters[name] = views[i]
                elif self.use_orig_params:
                    owner._parameters[name] = views[i]
                else:
                    owner.__dict__[name] = views[i]

    def _restore(self):
        from ... import empty

        for flat in self._flats:
            if self.use_orig_params:
                for owner, name in [flat.entries[0][:2]] + [a[:2] for a in flat.aliases]:
                    owner._parameters[name] = flat.home_shard
            else:
                flat.home._parameters[FLAT_PARAM] = flat.home_shard
                for owner, name in [e[:2] for e in flat.entries] + [a[:2] for a in flat.aliases]:
                    owner._parameters.pop(name, None)
                    owner.__dict__[name] = empty((0,), dtype=flat.info.dtype)

    def _take_shards(self):
        for flat in self._flats:
            flat.home_shard = flat.shard

    def forward(self, *args, **kwargs):
        """Gather this unit's parameters, run the wrapped module, put the shards back.

        Args:
            *args, **kwargs: the wrapped module's inputs.

        Returns:
            its output.

        Example::

            >>> out = model(x)  # doctest: +SKIP
        """
        if self._is_root is None:
            self._decide_roots()
        mp = self.mixed_precision
        if mp is not None and mp.param_dtype is not None and (
                mp.cast_forward_inputs or (self._is_root and mp.cast_root_forward_inputs)):
            args, kwargs = _cast_floats((args, kwargs), mp.param_dtype)
        self._take_shards()
        fn = _Gather.get()
        self._place([fn.apply(flat.shard, flat.info) for flat in self._flats])
        try:
            return self.module(*args, **kwargs)
        finally:
            self._restore()

    def _decide_roots(self):
        for m in self.modules():
            if isinstance(m, FullyShardedDataParallel):
                m._is_root = m is self

    def check_is_root(self) -> bool:
        """Whether this unit is the outermost one (no unit built around it).

        Returns:
            bool: True for the root.

        Example::

            >>> model.check_is_root()  # doctest: +SKIP
            True
        """
        return self._is_root is not False

    # -- gradients ------------------------------------------------------------------------------

    def register_comm_hook(self, state: object, hook) -> None:
        """Reduce every unit's gradients with ``hook`` instead of the built-in average
        (NOTE [ FSDP1 communication hooks ]); call it once, on the root, before training.

        Args:
            state (object): handed to every call of ``hook`` (e.g. ``DefaultState(group)``).
            hook (callable): ``hook(state, grad)`` under ``NO_SHARD``;
                ``hook(state, grad, output)`` for the sharded strategies.

        Raises:
            AssertionError: not the root, a hook already registered, or a hybrid strategy.

        Example::

            >>> from ember.distributed.algorithms._comm_hooks import default_hooks as dh
            >>> state = dh.DefaultState(group)  # doctest: +SKIP
            >>> model.register_comm_hook(state, dh.reduce_scatter_hook)  # doctest: +SKIP
        """
        if self._is_root is None:
            self._decide_roots()
        if not self.check_is_root():
            raise AssertionError("register_comm_hook can only be called on a root instance.")
        units = FullyShardedDataParallel.fsdp_modules(self)
        for unit in units:
            if unit.sharding_strategy in (ShardingStrategy.HYBRID_SHARD,
                                          ShardingStrategy._HYBRID_SHARD_ZERO2):
                raise AssertionError("Communication hook is not supported for hybrid strategies")
            if unit._unit.comm_hook is not None:
                raise AssertionError("A communication hook is already registered")
        if not callable(hook):
            raise ValueError(f"The communication hook must be callable but got {hook}")
        for unit in units:
            unit._unit.comm_hook, unit._unit.comm_hook_state = hook, state

    @contextlib.contextmanager
    def no_sync(self):
        """Inside this block backward keeps each rank's gradients local (accumulating); the
        first backward after it averages the sum across the ranks.

        Returns:
            a context manager.

        Example::

            >>> with model.no_sync():  # doctest: +SKIP
            ...     model(x0).sum().backward()
            >>> model(x1).sum().backward()  # doctest: +SKIP
        """
        units = FullyShardedDataParallel.fsdp_modules(self)
        before = [u._unit.sync for u in units]
        for u in units:
            u._unit.sync = False
        try:
            yield
        finally:
            for u, s in zip(units, before):
                u._unit.sync = s

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Scale the gradients so that their norm over all ranks' shards is at most
        ``max_norm`` (call on every rank).

        Args:
            max_norm (float): the largest norm.
            norm_type (float): the p of the p-norm (``inf`` for the largest magnitude).

        Returns:
            Tensor: the norm before clipping.

        Example::

            >>> total = model.clip_grad_norm_(1.0)  # doctest: +SKIP
        """
        from ... import distributed as dist, float32, no_grad, tensor

        p = float(norm_type)
        sharded, whole = 0.0, 0.0
        replicated = set()
        for u in FullyShardedDataParallel.fsdp_modules(self):
            if u.sharding_strategy is ShardingStrategy.NO_SHARD:
                replicated.update(id(f.shard) for f in u._flats)
        grads = [(q.grad, id(q) in replicated) for q in self.parameters() if q.grad is not None]
        for g, is_whole in grads:
            a = g.detach().to(float32).abs()
            v = float(a.max()) if p == float("inf") and a.numel() else \
                0.0 if p == float("inf") else float((a ** p).sum())
            if is_whole:
                whole = max(whole, v) if p == float("inf") else whole + v
            else:
                sharded = max(sharded, v) if p == float("inf") else sharded + v
        total = tensor([sharded], dtype=float32)
        dist.all_reduce(total, op=dist.ReduceOp.MAX if p == float("inf") else dist.ReduceOp.SUM,
                        group=self.process_group)
        if p == float("inf"):
            norm = max(float(total[0]), whole)
        else:
            norm = (float(total[0]) + whole) ** (1.0 / p)
        coef = min(float(max_norm) / (norm + 1e-6), 1.0)
        with no_grad():
            for g, _ in grads:
                g.mul_(coef)
        return tensor(norm, dtype=float32)

    # -- whole parameters -----------------------------------------------------------------------

    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(module, recurse=True, writeback=True, rank0_only=False,
                           offload_to_cpu=False, with_grads=False):
        """Inside this block every unit's parameters are whole ``Parameter``\\ s under their
        original names; with ``writeback`` changes to them reach the shards (call on every
        rank).

        Args:
            module (Module): an FSDP module or a module containing some.
            recurse (bool): also the units inside ``module``.
            writeback (bool): copy changes back into the shards on exit.
            rank0_only, offload_to_cpu, with_grads: accepted.

        Returns:
            a context manager.

        Example::

            >>> with FSDP.summon_full_params(model):  # doctest: +SKIP
            ...     print(model.module.weight.shape)
        """
        units = FullyShardedDataParallel.fsdp_modules(module)
        if not recurse and isinstance(module, FullyShardedDataParallel):
            units = [module]
        units = [u for u in units if not u._in_summon]
        fulls = []
        for u in units:
            u._take_shards()
            fulls.append([flat.info.gather(flat.shard) for flat in u._flats])
            if not u.use_orig_params:
                for flat in u._flats:
                    del flat.home._parameters[FLAT_PARAM]
            u._place(fulls[-1], as_parameters=True)
            u._in_summon = True
        try:
            yield
        finally:
            from ... import no_grad

            for u, fs in zip(units, fulls):
                u._in_summon = False
                if writeback:
                    with no_grad():
                        for flat, full in zip(u._flats, fs):
                            flat.home_shard.detach().copy_(flat.cut(full))
                u._restore()

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        # inside summon_full_params the names are the unwrapped model's, as PyTorch's
        for name, p in super().named_parameters(prefix, recurse, remove_duplicate):
            yield (_clean(name) if self._in_summon else name), p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        for name, b in super().named_buffers(prefix, recurse, remove_duplicate):
            yield (_clean(name) if self._in_summon else name), b

    def apply(self, fn):
        """Call ``fn`` on every submodule with the parameters whole (changes are kept).

        Args:
            fn (callable): ``module -> None``.

        Returns:
            self.

        Example::

            >>> model.apply(init_weights)  # doctest: +SKIP
        """
        with FullyShardedDataParallel.summon_full_params(self, writeback=True):
            Module.apply(self, fn)
        return self

    @staticmethod
    def fsdp_modules(module, root_only=False):
        """The FSDP units in ``module`` (itself included), outermost first.

        Args:
            module (Module): the model.
            root_only (bool): only the units not inside another.

        Returns:
            list of FullyShardedDataParallel.

        Example::

            >>> len(FSDP.fsdp_modules(model))  # doctest: +SKIP
            3
        """
        units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        if not root_only:
            return units
        inner = {id(m) for u in units for m in u.module.modules()
                 if isinstance(m, FullyShardedDataParallel)}
        return [u for u in units if id(u) not in inner]

    # -- state dicts ----------------------------------------------------------------------------

    @staticmethod
    def set_state_dict_type(module, state_dict_type, state_dict_config=None,
                            optim_state_dict_config=None):
        """Choose the form of ``state_dict()`` for every unit in ``module``.

        Args:
            module (Module): the model.
            state_dict_type (StateDictType): the form.
            state_dict_config (StateDictConfig): its options (default: the form's defaults).
            optim_state_dict_config (OptimStateDictConfig): the optimizer's options.

        Returns:
            StateDictSettings: the previous settings.

        Example::

            >>> FSDP.set_state_dict_type(model, StateDictType.FULL_STATE_DICT)  # doctest: +SKIP
        """
        units = FullyShardedDataParallel.fsdp_modules(module)
        previous = FullyShardedDataParallel.get_state_dict_type(module) if units else None
        config = state_dict_config or _DEFAULT_CONFIGS[state_dict_type]()
        for u in units:
            u._state_dict_type, u._state_dict_config = state_dict_type, config
            if optim_state_dict_config is not None:
                u._optim_state_dict_config = optim_state_dict_config
        return previous

    @staticmethod
    def get_state_dict_type(module):
        """The state dict settings of the units in ``module``.

        Args:
            module (Module): the model.

        Returns:
            StateDictSettings: the form and its options.

        Example::

            >>> FSDP.get_state_dict_type(model).state_dict_type  # doctest: +SKIP
            <StateDictType.FULL_STATE_DICT: 1>
        """
        u = FullyShardedDataParallel.fsdp_modules(module)[0]
        return StateDictSettings(u._state_dict_type, u._state_dict_config,
                                 u._optim_state_dict_config)

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module, state_dict_type, state_dict_config=None,
                        optim_state_dict_config=None):
        """Within this block ``state_dict()`` and ``load_state_dict()`` of the units in
        ``module`` take the given form.

        Args:
            module (Module): the model.
            state_dict_type (StateDictType): the form.
            state_dict_config (StateDictConfig): its options.
            optim_state_dict_config (OptimStateDictConfig): the optimizer's options.

        Returns:
            a context manager.

        Example::

            >>> with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):  # doctest: +SKIP
            ...     sd = model.state_dict()
        """
        prev = FullyShardedDataParallel.set_state_dict_type(
            module, state_dict_type, state_dict_config, optim_state_dict_config)
        try:
            yield
        finally:
            if prev is not None:
                FullyShardedDataParallel.set_state_dict_type(
                    module, prev.state_dict_type, prev.state_dict_config,
                    prev.optim_state_dict_config)

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """The state dict in the form ``state_dict_type`` chose (default ``FULL_STATE_DICT``:
        whole tensors under the original names; call on every rank).

        Args:
            destination, prefix, keep_vars: as ``Module.state_dict``.

        Returns:
            dict: name -> tensor (``DTensor`` for ``SHARDED_STATE_DICT``).

        Example::

            >>> sd = model.state_dict()  # doctest: +SKIP
        """
        if args or destination is not None:  # a parent's recursion: the raw entries
            return super().state_dict(*args, destination=destination, prefix=prefix,
                                      keep_vars=keep_vars)
        kind, config = self._state_dict_type, self._state_dict_config
        if kind is StateDictType.LOCAL_STATE_DICT:
            raw = super().state_dict(prefix=prefix, keep_vars=keep_vars)
            return _renamed(raw)
        with FullyShardedDataParallel.summon_full_params(self, writeback=False):
            raw = super().state_dict(prefix=prefix)
        out = _renamed({k: v.clone() for k, v in raw.items()})
        if kind is StateDictType.SHARDED_STATE_DICT:
            return {k: self._as_dtensor(v) for k, v in out.items()}
        if getattr(config, "rank0_only", False) and self.rank != 0:
            return {}
        return out

    def _as_dtensor(self, full):
        if not full.dim():
            return full
        from ..tensor._api import DTensor, _default_mesh
        from ..tensor.placement_types import Shard

        rows = full.shape[0]
        chunk = -(-rows // self.world_size)
        lo = min(self.rank * chunk, rows)
        piece = full[lo:min(lo + chunk, rows)].clone()
        return DTensor._make(piece, _default_mesh(None), (Shard(0),), tuple(full.shape))

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Load a state dict in the form ``state_dict_type`` chose (call on every rank).

        Args:
            state_dict (dict): entries as ``state_dict()`` gives them.
            strict (bool): refuse missing or unexpected keys.
            assign (bool): accepted (values are copied into the shards).

        Returns:
            ``(missing_keys, unexpected_keys)`` as ``Module.load_state_dict``.

        Example::

            >>> model.load_state_dict(sd)  # doctest: +SKIP
        """
        if self._state_dict_type is StateDictType.LOCAL_STATE_DICT:
            return super().load_state_dict(self._raw_names(state_dict), strict=strict)
        values = {k: (v.full_tensor() if hasattr(v, "full_tensor") else v)
                  for k, v in state_dict.items()}
        with FullyShardedDataParallel.summon_full_params(self, writeback=True):
            return super().load_state_dict(self._raw_names(values), strict=strict)

    def _raw_names(self, state_dict):
        raw = {_clean(k): k for k in Module.state_dict(self, keep_vars=True)}
        return {raw.get(k, k): v for k, v in state_dict.items()}

    # -- optimizer state ------------------------------------------------------------------------

    def _flat_of(self):
        """shard parameter id -> (its _Flat, the entries' original names)."""
        names = {}
        for n, m in self.named_modules():
            names[id(m)] = _clean(n)
        out = {}
        for u in FullyShardedDataParallel.fsdp_modules(self):
            for flat in u._flats:
                fqns = [(names[id(e[0])] + "." if names[id(e[0])] else "") + e[1]
                        for e in flat.entries]
                out[id(flat.shard)] = (flat, fqns)
        return out

    @staticmethod
    def optim_state_dict(model, optim, optim_state_dict=None, group=None):
        """The optimizer's state whole, keyed by the original parameter names (call on every
        rank).

        Args:
            model (FullyShardedDataParallel): the model the optimizer updates.
            optim (Optimizer): the optimizer.
            optim_state_dict (dict): its ``state_dict()`` (default: taken now).
            group: accepted.

        Returns:
            dict: ``{"state": {name: {key: value}}, "param_groups": [...]}`` with names.

        Example::

            >>> osd = FSDP.optim_state_dict(model, opt)  # doctest: +SKIP
        """
        osd = optim_state_dict if optim_state_dict is not None else optim.state_dict()
        flats = model._flat_of()
        names = {id(p): _clean(n) for n, p in Module.named_parameters(model)}
        params = [p for g in optim.param_groups for p in g["params"]]
        state, id_names = {}, {}
        for i, p in enumerate(params):
            flat, fqns = flats.get(id(p), (None, [names.get(id(p), str(i))]))
            id_names[i] = fqns
            st = osd["state"].get(i)
            if st is None:
                continue
            for fqn in fqns:
                state[fqn] = {}
            for k, v in st.items():
                if flat is not None and hasattr(v, "dim") and v.dim() and \
                        tuple(v.shape) == tuple(p.shape):
                    whole = flat.info.gather(v)
                    for fqn, view in zip(fqns, flat.views(whole)):
                        state[fqn][k] = view.clone()
                else:
                    for fqn in fqns:
                        state[fqn][k] = v.clone() if hasattr(v, "clone") else v
        groups = []
        for g in osd["param_groups"]:
            g = dict(g)
            g["params"] = [n for i in g["params"] for n in id_names.get(i, [i])]
            groups.append(g)
        config = model._optim_state_dict_config
        if getattr(config, "rank0_only", False) and model.rank != 0:
            return {}
        return {"state": state, "param_groups": groups}

    @staticmethod
    def optim_state_dict_to_load(model, optim, optim_state_dict, is_named_optimizer=False,
                                 load_directly=False, group=None):
        """Cut a whole optimizer state (from ``optim_state_dict``) into what this rank's
        optimizer loads.

        Args:
            model (FullyShardedDataParallel): the model the optimizer updates.
            optim (Optimizer): the optimizer.
            optim_state_dict (dict): the whole state, keyed by names.
            is_named_optimizer, group: accepted.
            load_directly (bool): also load it into ``optim``.

        Returns:
            dict: a state dict for ``optim.load_state_dict``.

        Example::

            >>> sd = FSDP.optim_state_dict_to_load(model, opt, osd)  # doctest: +SKIP
            >>> opt.load_state_dict(sd)  # doctest: +SKIP
        """
        from ... import cat

        flats = model._flat_of()
        names = {id(p): _clean(n) for n, p in Module.named_parameters(model)}
        whole = optim_state_dict["state"]
        state, groups, i = {}, [], 0
        live = optim.param_groups if optim is not None else [{"params": list(model.parameters())}]
        for g_live, g_saved in zip(live, optim_state_dict["param_groups"]):
            ids = []
            for p in g_live["params"]:
                flat, fqns = flats.get(id(p), (None, [names.get(id(p), str(i))]))
                ids.append(i)
                if all(f in whole for f in fqns):
                    st = {}
                    for k, v in whole[fqns[0]].items():
                        if flat is not None and hasattr(v, "dim") and v.dim():
                            full = cat([whole[f][k].reshape(-1) for f in fqns])
                            st[k] = flat.cut(full)
                        else:
                            st[k] = v.clone() if hasattr(v, "clone") else v
                    state[i] = st
                i += 1
            g = dict(g_saved)
            g["params"] = ids
            groups.append(g)
        out = {"state": state, "param_groups": groups}
        if load_directly:
            optim.load_state_dict(out)
        return out

    @staticmethod
    def sharded_optim_state_dict(model, optim, group=None):
        """The optimizer's state keyed by names (ember gives it whole, as
        ``optim_state_dict``; call on every rank).

        Args:
            model (FullyShardedDataParallel): the model the optimizer updates.
            optim (Optimizer): the optimizer.
            group: accepted.

        Returns:
            dict: ``{"state": {name: ...}, "param_groups": [...]}``.

        Example::

            >>> osd = FSDP.sharded_optim_state_dict(model, opt)  # doctest: +SKIP
        """
        return FullyShardedDataParallel.optim_state_dict(model, optim)

    @staticmethod
    def flatten_sharded_optim_state_dict(sharded_optim_state_dict, model, optim):
        """Cut a state from ``sharded_optim_state_dict`` into what ``optim`` loads.

        Args:
            sharded_optim_state_dict (dict): the state, keyed by names.
            model (FullyShardedDataParallel): the model.
            optim (Optimizer): the optimizer.

        Returns:
            dict: a state dict for ``optim.load_state_dict``.

        Example::

            >>> sd = FSDP.flatten_sharded_optim_state_dict(osd, model, opt)  # doctest: +SKIP
        """
        return FullyShardedDataParallel.optim_state_dict_to_load(model, optim,
                                                                 sharded_optim_state_dict)

    @staticmethod
    def scatter_full_optim_state_dict(full_optim_state_dict, model, optim_input=None,
                                      optim=None, group=None):
        """Send rank 0's whole optimizer state to every rank and cut each rank's part (the
        other ranks may pass None; call on every rank).

        Args:
            full_optim_state_dict (dict or None): the whole state, on rank 0.
            model (FullyShardedDataParallel): the model.
            optim_input, group: accepted.
            optim (Optimizer): the optimizer that will load it.

        Returns:
            dict: a state dict for ``optim.load_state_dict``.

        Example::

            >>> sd = FSDP.scatter_full_optim_state_dict(full, model)  # doctest: +SKIP
        """
        from ... import distributed as dist

        box = [full_optim_state_dict if model.rank == 0 else None]
        dist.broadcast_object_list(box, src=dist.get_global_rank(model.process_group, 0),
                                   group=model.process_group)
        return FullyShardedDataParallel.optim_state_dict_to_load(model, optim, box[0])

    @staticmethod
    def full_optim_state_dict(model, optim, optim_input=None, rank0_only=True, group=None):
        """PyTorch's older spelling of ``optim_state_dict``: the whole optimizer state keyed
        by names, by default on rank 0 only (call on every rank).

        Args:
            model (FullyShardedDataParallel): the model the optimizer updates.
            optim (Optimizer): the optimizer.
            optim_input, group: accepted.
            rank0_only (bool): the other ranks get an empty dict.

        Returns:
            dict: the whole state (``{}`` on other ranks with ``rank0_only``).

        Example::

            >>> full = FSDP.full_optim_state_dict(model, opt)  # doctest: +SKIP
        """
        out = FullyShardedDataParallel.optim_state_dict(model, optim)
        return {} if rank0_only and model.rank != 0 else out

    @staticmethod
    def rekey_optim_state_dict(optim_state_dict, optim_state_key_type, model, optim_input=None,
                               optim=None):
        """Re-key an optimizer state dict between parameter names and parameter indices, to
        move optimizer state between a wrapped model and a plain one.

        Indices are positions in ``optim``'s parameter groups, else in ``optim_input``, else
        in ``model.parameters()``; names are the unwrapped model's. A state dict already
        keyed that way is returned as it is; otherwise the states are shared, not copied, and
        each group's ``params`` come out sorted.

        Args:
            optim_state_dict (dict): the optimizer state dict.
            optim_state_key_type (OptimStateKeyType): ``PARAM_NAME`` or ``PARAM_ID``.
            model (Module): the model the parameters belong to.
            optim_input (iterable, optional): the parameters (or groups) in optimizer order.
            optim (Optimizer, optional): the optimizer, for its parameter order.

        Returns:
            dict: the re-keyed state dict.

        Raises:
            RuntimeError: re-keying by name a parameter that holds several (a flat parameter).

        Example::

            >>> osd = FSDP.full_optim_state_dict(model, optim)  # doctest: +SKIP
            >>> key = OptimStateKeyType.PARAM_ID
            >>> plain = FSDP.rekey_optim_state_dict(osd, key, net)  # doctest: +SKIP
            >>> plain_optim.load_state_dict(plain)  # doctest: +SKIP
        """
        if optim_state_key_type not in (OptimStateKeyType.PARAM_NAME,
                                        OptimStateKeyType.PARAM_ID):
            raise ValueError(f"rekey_optim_state_dict: unknown key type {optim_state_key_type}")
        to_names = optim_state_key_type is OptimStateKeyType.PARAM_NAME
        keys = list(optim_state_dict["state"]) + [k for g in optim_state_dict["param_groups"]
                                                  for k in g["params"]]
        if all(isinstance(k, str) == to_names for k in keys):
            return optim_state_dict
        if optim is not None:
            params = [p for g in optim.param_groups for p in g["params"]]
        elif optim_input is not None:
            items = list(optim_input)
            params = [p for g in items for p in g["params"]] if items and isinstance(
                items[0], dict) else items
        else:
            params = list(model.parameters())
        flat = FullyShardedDataParallel._flat_of(model)
        fqns: dict = {}
        for name, p in Module.named_parameters(model):
            fqns[id(p)] = list(flat[id(p)][1]) if id(p) in flat else [_clean(name)]
        if to_names:
            def key(i):
                names = fqns[id(params[i])]
                if len(names) != 1:
                    raise RuntimeError("Each parameter should only map to one parameter name "
                                       f"but got {len(names)}: {names}")
                return names[0]
        else:
            ids = {n: i for i, p in enumerate(params) for n in fqns.get(id(p), ())}

            def key(name):
                return ids[name]
        state = {key(k): v for k, v in optim_state_dict["state"].items()}
        groups = [{**g, "params": sorted(key(k) for k in g["params"])}
                  for g in optim_state_dict["param_groups"]]
        return {"state": state, "param_groups": groups}

    @staticmethod
    def shard_full_optim_state_dict(full_optim_state_dict, model, optim_input=None,
                                    optim=None):
        """Cut a whole optimizer state into this rank's part (PyTorch's older spelling of
        ``optim_state_dict_to_load``; without ``optim`` the parameters are taken in
        ``model.parameters()`` order, one group).

        Args:
            full_optim_state_dict (dict): the whole state, keyed by names.
            model (FullyShardedDataParallel): the model.
            optim_input: accepted.
            optim (Optimizer): the optimizer that will load it.

        Returns:
            dict: a state dict for ``optim.load_state_dict``.

        Example::

            >>> opt.load_state_dict(FSDP.shard_full_optim_state_dict(full, model))  # doctest: +SKIP
        """
        return FullyShardedDataParallel.optim_state_dict_to_load(model, optim,
                                                                 full_optim_state_dict)


def _renamed(sd):
    return {_clean(k): v for k, v in sd.items()}


def _ignored_ids(ignored_modules, ignored_states) -> set:
    ids = set()
    for item in list(ignored_modules or ()) + list(ignored_states or ()):
        if isinstance(item, Module):
            ids.update(id(m) for m in item.modules())
            ids.update(id(p) for p in item.parameters())
        else:
            ids.add(id(item))
    return ids


def _unit_modules(module):
    """``module`` and its submodules, not entering FSDP units."""
    yield module
    for child in module._modules.values():
        if child is not None and not isinstance(child, FullyShardedDataParallel):
            yield from _unit_modules(child)


def _auto_wrap(module, policy, kwargs, ignored, overrides) -> int:
    """Wrap ``module``'s descendants that ``policy`` picks, innermost first; the number of
    parameters now in units."""
    wrapped = 0
    for name, child in list(module._modules.items()):
        if child is None or isinstance(child, FullyShardedDataParallel) or id(child) in ignored:
            continue
        numel = sum(p.numel() for p in child.parameters() if id(p) not in ignored
                    and not getattr(p, "_fsdp_flat", False))
        if policy(module=child, recurse=True, nonwrapped_numel=numel):
            inside = _auto_wrap(child, policy, kwargs, ignored, overrides)
            if policy(module=child, recurse=False, nonwrapped_numel=numel - inside):
                extra = overrides(child) if overrides is not None else {}
                module._modules[name] = FullyShardedDataParallel(child, **{**kwargs, **extra})
                wrapped += numel
            else:
                wrapped += inside
    return wrapped


def _cast_floats(obj, dtype):
    from ... import Tensor

    if isinstance(obj, Tensor):
        return obj.to(dtype) if obj.is_floating_point() else obj
    if isinstance(obj, tuple):
        return tuple(_cast_floats(o, dtype) for o in obj)
    if isinstance(obj, list):
        return [_cast_floats(o, dtype) for o in obj]
    if isinstance(obj, dict):
        return {k: _cast_floats(v, dtype) for k, v in obj.items()}
    return obj
