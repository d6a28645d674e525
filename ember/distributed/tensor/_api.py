"""``DTensor``: a tensor laid out over a ``DeviceMesh``, and the functions that make one.

NOTE [ DTensor ]
A DTensor is an ember ``Tensor`` subclass holding this rank's piece (``_local_tensor``, a
plain tensor) and a spec: the mesh, one placement per mesh dimension (NOTE [ Placements ]),
and the global shape. Its metadata (``shape``, ``size()``, ``dim()``, ``numel()``) is the
global tensor's; every tensor field ember's internals read (``_data``, ``_rg``,
``_grad_fn``, ``_grad``...) is the local piece's, so autograd records on the local pieces
and code that works on raw buffers (the optimizers' fused CPU kernels) updates the piece in
place. Operations reach ``DTensor.__torch_function__`` (NOTE [ __torch_function__ ] in
ember/_overrides.py), which decides the placements of the result and runs the op on the
local pieces (NOTE [ DTensor ops ] in _ops.py). ``.grad`` is a DTensor laid out as the
parameter (NOTE [ DTensor redistribution ] says how gradients keep that layout), and
``nn.Parameter(dtensor)`` gives a DTensor that is also a ``Parameter``.
"""

from __future__ import annotations

import weakref

from ..._core.tensor import Tensor
from ...nn.parameter import Parameter
from .placement_types import Partial, Placement, Replicate, Shard
from ._redistribute import (_PENDING, VIEWS, grad_placements, is_grad_leaf, local_layout,
                            norm_dim, note_use, pending_dims, redistribute_local, settle,
                            transform)

__all__ = ["DTensor", "distribute_module", "distribute_tensor", "empty", "full", "ones", "rand",
           "randn", "zeros"]


class DTensorSpec:
    """Where a DTensor lies: ``mesh``, ``placements`` (a tuple, one per mesh dimension) and
    the global ``shape``.

    Example::

        >>> spec = DTensorSpec(mesh, (Shard(0),), (4, 2))  # doctest: +SKIP
    """

    __slots__ = ("mesh", "placements", "shape")

    def __init__(self, mesh, placements, shape):
        self.mesh, self.placements, self.shape = mesh, tuple(placements), tuple(shape)

    @property
    def stride(self) -> tuple:
        """The global tensor's contiguous strides."""
        out, step = [], 1
        for s in reversed(self.shape):
            out.append(step)
            step *= max(s, 1)
        return tuple(reversed(out))

    def __repr__(self):
        return f"DTensorSpec(mesh={self.mesh}, placements={self.placements}, shape={self.shape})"


def _forward(name):
    def get(self):
        return getattr(self._local_tensor, name)

    def set_(self, value):
        setattr(self._local_tensor, name, value)

    def del_(self):
        delattr(self._local_tensor, name)

    return property(get, set_, del_)


def normalize_placements(placements, mesh, ndim, what="placements"):
    """``placements`` as a tuple, one per mesh dimension, ``Shard`` dims counted from 0.

    Raises:
        ValueError: the wrong number of placements or a shard dimension out of range.
    """
    if placements is None:
        return (Replicate(),) * mesh.ndim
    placements = tuple(placements)
    if len(placements) != mesh.ndim:
        raise ValueError(f"`{what}` must have the same length as `device_mesh.ndim`! Found "
                         f"{what} length: {len(placements)}, and device_mesh.ndim: {mesh.ndim}.")
    out = []
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"expected a Placement (Shard, Replicate, Partial), got "
                            f"{type(p).__name__}")
        if isinstance(p, Shard):
            d = p.dim
            if not -ndim <= d < max(ndim, 1) or ndim == 0:
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[{-ndim}, {ndim - 1}], but got {d})")
            p = Shard(norm_dim(d, ndim))
        out.append(p)
    return tuple(out)


class DTensor(Tensor):
    """A tensor distributed over a ``DeviceMesh``: each rank holds a piece (``to_local()``),
    laid out by one placement per mesh dimension (``Shard(d)``, ``Replicate()``,
    ``Partial()``). Shapes and metadata are the whole tensor's; operations run on the pieces
    and give DTensors, communicating where the layout asks for it.

    Make one with ``distribute_tensor`` or ``DTensor.from_local`` (the class is not called).

    Args:
        none: see ``distribute_tensor``, ``DTensor.from_local`` and the factories.

    Example::

        >>> mesh = init_device_mesh("cpu", (2,))  # doctest: +SKIP
        >>> x = distribute_tensor(ember.arange(4.0), mesh, [Shard(0)])  # doctest: +SKIP
        >>> x.to_local()  # on rank 1  # doctest: +SKIP
        tensor([2., 3.])
    """

    __slots__ = ("_local_tensor", "_spec", "_grad_view", "_grad_of")

    def __new__(cls, *args, **kwargs):
        raise TypeError("DTensor is made with distribute_tensor or DTensor.from_local")

    # -- the local piece carries every tensor field (NOTE [ DTensor ]) -----------------------
    def _get_data(self):
        # raw data of a gradient held unsummed is its sum (NOTE [ Partial gradients of
        # leaves ] in _redistribute.py): the fused optimizer kernels read it so
        leaf = self._grad_of
        if leaf is not None and pending_dims(leaf):
            settle(leaf)
        return self._local_tensor._data

    def _set_data(self, value):
        self._local_tensor._data = value

    _data = property(_get_data, _set_data)
    _rg = _forward("_rg")
    _grad_fn = _forward("_grad_fn")
    _base = _forward("_base")
    _vc = _forward("_vc")
    _grad = _forward("_grad")
    _out_nr = _forward("_out_nr")
    _accum = _forward("_accum")
    _hooks = _forward("_hooks")
    _post_acc_hooks = _forward("_post_acc_hooks")
    _retains_grad = _forward("_retains_grad")
    _view_meta = _forward("_view_meta")
    _inference = _forward("_inference")
    _tangent = _forward("_tangent")

    @classmethod
    def _make(cls, local, mesh, placements, shape):
        t = object.__new__(cls)
        t._local_tensor = local
        t._spec = DTensorSpec(mesh, placements, shape)
        t._grad_view = None
        t._grad_of = None
        return t

    # -- metadata -----------------------------------------------------------------------------
    @property
    def device_mesh(self):
        """The ``DeviceMesh`` the tensor lies on."""
        return self._spec.mesh

    @property
    def placements(self) -> tuple:
        """One placement per mesh dimension."""
        return self._spec.placements

    @property
    def shape(self):
        """The global tensor's shape."""
        from ..._core.size import Size

        return Size(self._spec.shape)

    @property
    def ndim(self) -> int:
        """The global tensor's number of dimensions."""
        return len(self._spec.shape)

    def __len__(self):
        if not self._spec.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._spec.shape[0]

    @property
    def data(self):
        """A DTensor sharing this one's pieces, outside autograd; assignable."""
        return DTensor._make(self._local_tensor.detach(), self._spec.mesh, self._spec.placements,
                             self._spec.shape)

    @data.setter
    def data(self, value):
        if isinstance(value, DTensor):
            self._local_tensor.data = value._local_tensor
            self._spec = DTensorSpec(value._spec.mesh, value._spec.placements, value._spec.shape)
        else:
            raise RuntimeError("DTensor.data: expected a DTensor")

    @property
    def grad(self):
        """The gradient, a DTensor laid out as this one (None until backward)."""
        local = self._local_tensor
        g = local.grad
        if g is None:
            return None
        placements = list(grad_placements(self._spec.placements))
        for m in pending_dims(local):  # NOTE [ Partial gradients of leaves ]
            placements[m] = Partial()
        placements = tuple(placements)
        cached = self._grad_view
        if cached is not None and cached._local_tensor is g and \
                cached._spec.placements == placements:
            return cached
        view = DTensor._make(g, self._spec.mesh, placements, self._spec.shape)
        view._grad_of = local
        self._grad_view = view
        if placements != grad_placements(self._spec.placements):
            VIEWS[local] = weakref.ref(view)
        return view

    @grad.setter
    def grad(self, value):
        local = self._local_tensor
        _PENDING.pop(local, None)
        VIEWS.pop(local, None)
        if value is None:
            local.grad = None
        elif isinstance(value, DTensor):
            local.grad = value._local_tensor
            dims = tuple(m for m, p in enumerate(value.placements) if isinstance(p, Partial))
            if dims:  # an unsummed gradient set by hand stays so
                _PENDING[local] = (self._spec.mesh, dims)
        else:
            raise RuntimeError("aten.grad: got mixed torch.Tensor and DTensor, need to convert "
                               "all torch.Tensor to DTensor before calling distributed operators!")
        self._grad_view = None

    @grad.deleter
    def grad(self):
        _PENDING.pop(self._local_tensor, None)
        VIEWS.pop(self._local_tensor, None)
        self._local_tensor.grad = None

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Backward from this DTensor; gradients reach the leaves' local pieces (and their
        ``.grad``, DTensors laid out as the leaves).

        Args:
            gradient (DTensor, optional): the gradient of this tensor (default: ones, for a
                scalar).
            retain_graph, create_graph, inputs: as ``Tensor.backward``.

        Returns:
            None

        Example::

            >>> loss = model(x).sum()  # doctest: +SKIP
            >>> loss.full_tensor().backward()  # doctest: +SKIP
        """
        if isinstance(gradient, DTensor):
            gradient = redistribute_local(gradient._local_tensor, self._spec.mesh,
                                          self._spec.shape, gradient.placements,
                                          grad_placements(self._spec.placements))
        local = self._local_tensor
        if inputs is not None:
            inputs = [i._local_tensor if isinstance(i, DTensor) else i for i in inputs]
        local.backward(gradient, retain_graph=retain_graph, create_graph=create_graph,
                       inputs=inputs)

    def __repr__(self, *, tensor_contents=None):
        return (f"DTensor(local_tensor={self._local_tensor}, device_mesh={self._spec.mesh}, "
                f"placements={self._spec.placements})")

    def __format__(self, spec):
        return format(repr(self), spec)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        local = self._local_tensor.detach().clone().requires_grad_(self._local_tensor.requires_grad)
        out = DTensor._make(local, self._spec.mesh, self._spec.placements, self._spec.shape)
        if isinstance(self, _DTensorParameter):
            out = out._as_parameter(self.requires_grad)
        memo[id(self)] = out
        return out

    _saved_by_reduce = True  # ember.save writes it through __reduce_ex__

    def __reduce_ex__(self, protocol):
        return (_rebuild_dtensor, self._pickled())

    def _pickled(self):
        # NOTE [ Pickled DTensors ]
        # Plain values only (ember.load(weights_only=True) allows this one rebuild function):
        # this rank's piece as an ordinary tensor, the mesh's layout (NOTE [ Pickled meshes ]
        # in _extras.py), each placement as (name, *fields), the global shape, and whether it
        # requires grad and is a parameter. Each rank pickles its own piece, as PyTorch does.
        local = self._local_tensor.detach()
        kinds = [(type(p).__name__, *_fields(p)) for p in self._spec.placements]
        return (local, self._spec.mesh._layout(), kinds, tuple(self._spec.shape),
                self.requires_grad, isinstance(self, Parameter))

    def _as_parameter(self, requires_grad=True):
        """This DTensor as a module parameter (``nn.Parameter(dtensor)``): a leaf sharing the
        pieces, also an instance of ``nn.Parameter``."""
        local = self._local_tensor.detach()
        if requires_grad:
            local.requires_grad_(True)
        return _DTensorParameter._make(local, self._spec.mesh, self._spec.placements,
                                       self._spec.shape)

    # -- layout changes -------------------------------------------------------------------------
    @staticmethod
    def from_local(local_tensor, device_mesh=None, placements=None, *, run_check=False,
                   shape=None, stride=None):
        """A DTensor from each rank's piece (differentiable: gradients reach ``local_tensor``).

        Args:
            local_tensor (Tensor): this rank's piece.
            device_mesh (DeviceMesh, optional): the mesh (default: the one ``init_device_mesh``
                made last, or a 1-D mesh of the world).
            placements (sequence of Placement, optional): default all ``Replicate()``.
            run_check (bool): broadcast the replicated pieces from the first rank of each
                mesh dimension, so they agree. Keyword-only.
            shape, stride (optional): the global shape (default: the pieces are equal, so
                a sharded dimension is ``k`` times the local one). Keyword-only.

        Returns:
            DTensor

        Example::

            >>> dt = DTensor.from_local(ember.ones(2), mesh, [Shard(0)])  # doctest: +SKIP
            >>> dt.shape  # with 2 ranks  # doctest: +SKIP
            ember.Size([4])
        """
        from ... import distributed as dist

        mesh = _default_mesh(device_mesh)
        placements = normalize_placements(placements, mesh, local_tensor.dim())
        if shape is None:
            shape = list(local_tensor.shape)
            for m, p in enumerate(placements):
                if isinstance(p, Shard):
                    shape[p.dim] *= mesh.size(m)
        if run_check:
            for m, p in enumerate(placements):
                if isinstance(p, Replicate) and mesh.size(m) > 1:
                    g = mesh.get_group(m)
                    fixed = local_tensor.detach().clone().contiguous()
                    dist.broadcast(fixed, src=dist.get_global_rank(g, 0), group=g)
                    with _no_grad():
                        local_tensor.detach().copy_(fixed)
        local = local_tensor.view_as(local_tensor) if local_tensor.requires_grad else local_tensor
        return DTensor._make(local, mesh, placements, tuple(shape))

    def to_local(self, *, grad_placements=None):
        """This rank's piece (differentiable).

        Args:
            grad_placements (sequence of Placement, optional): how the piece's gradient will
                be laid out, when not as this DTensor. Keyword-only.

        Returns:
            Tensor

        Example::

            >>> distribute_tensor(ember.arange(4.0), mesh, [Shard(0)]).to_local()  # doctest: +SKIP
            tensor([0., 1.])
        """
        local = self._local_tensor
        if is_grad_leaf(local):
            note_use(local)  # NOTE [ Partial gradients of leaves ]
        if grad_placements is not None:
            gp = normalize_placements(grad_placements, self._spec.mesh, self.ndim,
                                      "grad_placements")
            mine = grad_placements_of(self._spec.placements)
            if tuple(gp) != mine and local.requires_grad:
                return _regrad(local, self._spec.mesh, self._spec.shape, gp, mine)
        return local.view_as(local) if local.requires_grad else local

    def redistribute(self, device_mesh=None, placements=None, *, async_op=False,
                     forward_dtype=None, backward_dtype=None):
        """This tensor laid out as ``placements`` (communicating as needed; differentiable).

        Args:
            device_mesh (DeviceMesh, optional): must be the tensor's own mesh.
            placements (sequence of Placement): the new placements (default: unchanged).
            async_op, forward_dtype, backward_dtype: accepted; ember communicates in the
                tensor's dtype, synchronously. Keyword-only.

        Returns:
            DTensor

        Raises:
            RuntimeError: another mesh, or a Partial target from a non-Partial placement.

        Example::

            >>> x.redistribute(placements=[Replicate()])  # doctest: +SKIP
        """
        mesh = self._spec.mesh if device_mesh is None else device_mesh
        if mesh is not self._spec.mesh and not _same_mesh(mesh, self._spec.mesh):
            raise NotImplementedError("Cross device mesh comm not supported yet!")
        placements = (self._spec.placements if placements is None
                      else normalize_placements(placements, mesh, self.ndim))
        for old, new in zip(self._spec.placements, placements):
            if isinstance(new, Partial) and old != new:
                raise RuntimeError("Can not redistribute to Partial, redistributing to "
                                   "Partial is for internal use only!")
        if is_grad_leaf(self._local_tensor):
            note_use(self._local_tensor)  # NOTE [ Partial gradients of leaves ]
        local = redistribute_local(self._local_tensor, self._spec.mesh, self._spec.shape,
                                   self._spec.placements, placements)
        return DTensor._make(local, self._spec.mesh, placements, self._spec.shape)

    def full_tensor(self, *, grad_placements=None):
        """The whole tensor on every rank (an all-gather / all-reduce; differentiable).

        Args:
            grad_placements (sequence of Placement, optional): as ``to_local``. Keyword-only.

        Returns:
            Tensor

        Example::

            >>> x = distribute_tensor(ember.arange(4.0), mesh, [Shard(0)])  # doctest: +SKIP
            >>> x.full_tensor()  # doctest: +SKIP
            tensor([0., 1., 2., 3.])
        """
        whole = self.redistribute(placements=[Replicate()] * self._spec.mesh.ndim)
        return whole.to_local(grad_placements=grad_placements)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from ._ops import dispatch

        return dispatch(func, args, kwargs or {})


def grad_placements_of(placements):
    """The placements of a gradient of a tensor laid out as ``placements``."""
    return grad_placements(placements)


def _regrad(local, mesh, shape, given, wanted):
    # identity forward; the piece's gradient (laid out as `given`) moves to `wanted`
    return _Regrad.get().apply(local, mesh, tuple(shape), tuple(given), tuple(wanted))


class _Regrad:
    fn = None

    @classmethod
    def get(cls):
        if cls.fn is None:
            from ...autograd import Function

            class Regrad(Function):
                @staticmethod
                def forward(ctx, local, mesh, shape, given, wanted):
                    ctx.args = (mesh, shape, given, wanted)
                    return local.view_as(local)

                @staticmethod
                def backward(ctx, grad):
                    mesh, shape, given, wanted = ctx.args
                    return transform(grad, mesh, shape, given, wanted), None, None, None, None

            cls.fn = Regrad
        return cls.fn


def _no_grad():
    from ... import no_grad

    return no_grad()


class _DTensorParameter(DTensor, Parameter):
    """A DTensor that is a module parameter (what ``nn.Parameter(dtensor)`` returns)."""

    __slots__ = ()


# it shows as PyTorch's parameters do: a DTensor
_DTensorParameter.__name__ = _DTensorParameter.__qualname__ = "DTensor"


def _fields(p):
    if isinstance(p, Shard) and type(p) is Shard:
        return (p.dim,)
    if isinstance(p, Partial):
        return (p.reduce_op,)
    if type(p).__name__ == "_StridedShard":
        return (p.dim, p.split_factor)
    return ()


def _rebuild_dtensor(local, mesh_layout, kinds, shape, requires_grad, is_param):
    """A DTensor from what ``DTensor._pickled`` wrote (NOTE [ Pickled DTensors ])."""
    from .._extras import _restore_mesh
    from .placement_types import _StridedShard

    makers = {"Shard": Shard, "Replicate": Replicate, "Partial": Partial,
              "_StridedShard": lambda d, sf: _StridedShard(d, split_factor=sf)}
    if not isinstance(local, Tensor):
        raise TypeError(f"a pickled DTensor's piece must be a Tensor, not {type(local).__name__}")
    placements = []
    for kind in kinds:
        make = makers.get(kind[0]) if kind else None
        if make is None:
            raise ValueError(f"unknown placement in a pickled DTensor: {kind!r}")
        placements.append(make(*kind[1:]))
    out = DTensor._make(local.detach(), _restore_mesh(mesh_layout), tuple(placements),
                        tuple(int(n) for n in shape))
    if is_param:
        return out._as_parameter(requires_grad)
    if requires_grad:
        out._local_tensor.requires_grad_(True)
    return out


def _same_mesh(a, b) -> bool:
    return (a.device_type == b.device_type and a.shape == b.shape
            and a._mesh.tolist() == b._mesh.tolist())


def _default_mesh(mesh):
    if mesh is not None:
        return mesh
    from ..._core import tensor as _t  # noqa: F401
    from .. import get_world_size, init_process_group, is_initialized
    from ..device_mesh import init_device_mesh

    from .. import _group

    if not is_initialized():
        init_process_group()
    world, mesh = _DEFAULT_MESH[0] if _DEFAULT_MESH else (None, None)
    if world is not _group._WORLD:  # NOTE [ The default mesh lives with its group ]
        mesh = init_device_mesh("cpu", (get_world_size(),))
        _DEFAULT_MESH[:] = [(_group._WORLD, mesh)]
    return mesh


# NOTE [ The default mesh lives with its group ]
# ``fully_shard`` and ``distribute_tensor`` without a mesh use a 1-D mesh over the default
# group, made once and kept -- but only for as long as that group lives. It is kept here
# with the group it was cut from and made again when the default group is another one:
# after ``destroy_process_group()`` and a new ``init_process_group()`` the old mesh's
# communicators are freed, and a parameter sharded by the new group must not reach them
# (PyTorch makes a new default mesh from the new group too). A mesh the user made and kept
# across the two is as dead as PyTorch's would be.
_DEFAULT_MESH: list = []  # [(the default group it was made from, the mesh)] or []


# -- making DTensors ------------------------------------------------------------------------------

def distribute_tensor(tensor, device_mesh=None, placements=None, *, src_data_rank=0):
    """Lay ``tensor`` out over ``device_mesh``: each rank keeps its piece of the first rank's
    values (``src_data_rank``), or of its own with ``src_data_rank=None``.

    Args:
        tensor (Tensor): the whole tensor (the same shape on every rank).
        device_mesh (DeviceMesh, optional): default a 1-D mesh of the world.
        placements (sequence of Placement, optional): default all ``Replicate()``.
        src_data_rank (int or None): the mesh rank whose values are used. Keyword-only.

    Returns:
        DTensor: a leaf, requiring grad as ``tensor`` does.

    Raises:
        ValueError: wrong number of placements. RuntimeError: ``tensor`` is already a
        DTensor laid out otherwise.

    Example::

        >>> mesh = init_device_mesh("cpu", (2,))  # doctest: +SKIP
        >>> distribute_tensor(ember.arange(4.0), mesh, [Shard(0)])  # doctest: +SKIP
    """
    from ... import distributed as dist

    mesh = _default_mesh(device_mesh)
    if isinstance(tensor, DTensor):
        placements = normalize_placements(placements, mesh, tensor.ndim)
        if tensor.placements != placements:
            raise ValueError(f"Cannot distribute a DTensor with placements "
                             f"{tensor.placements} to a different placements {placements}. "
                             "do you want to call `redistribute` instead?")
        return tensor
    placements = normalize_placements(placements, mesh, tensor.dim())
    whole = tensor.detach()
    if src_data_rank is not None and mesh.get_coordinate() is not None:
        whole = whole.clone().contiguous()
        for m in range(mesh.ndim):
            if mesh.size(m) > 1:
                g = mesh.get_group(m)
                dist.broadcast(whole, src=dist.get_global_rank(g, src_data_rank % mesh.size(m)),
                               group=g)
    local = transform(whole, mesh, tuple(tensor.shape), (Replicate(),) * mesh.ndim, placements)
    if local is whole or local._data is tensor._data:
        local = local.clone()
    local = local.detach()
    if tensor.requires_grad:
        local.requires_grad_(True)
    return DTensor._make(local, mesh, placements, tuple(tensor.shape))


def distribute_module(module, device_mesh=None, partition_fn=None, input_fn=None,
                      output_fn=None):
    """Turn ``module``'s parameters and buffers into DTensors and hook its inputs/outputs.

    Args:
        module (nn.Module): the module, changed in place.
        device_mesh (DeviceMesh, optional): default a 1-D mesh of the world.
        partition_fn (callable, optional): ``partition_fn(name, submodule, mesh)`` for every
            submodule, to replace its parameters by DTensors; parameters it leaves plain (or
            all, without it) are replicated.
        input_fn (callable, optional): ``input_fn(module, inputs, mesh)`` runs before forward;
            what it returns replaces the inputs.
        output_fn (callable, optional): ``output_fn(module, outputs, mesh)`` runs after
            forward; what it returns replaces the outputs.

    Returns:
        nn.Module: ``module``.

    Raises:
        RuntimeError: the module was already distributed.

    Example::

        >>> distribute_module(model, mesh)  # every parameter now Replicate  # doctest: +SKIP
    """
    from ...nn import Parameter

    mesh = _default_mesh(device_mesh)
    if getattr(module, "_distribute_module_applied", False):
        raise RuntimeError("distribute_module should only be called once on a module, but it "
                           "has already been called on this module!")

    def replicate(m):
        for key, p in list(m._parameters.items()):
            if p is not None and not isinstance(p, DTensor):
                m._parameters[key] = Parameter(
                    distribute_tensor(p.detach(), mesh, [Replicate()] * mesh.ndim),
                    p.requires_grad)
        for key, b in list(m._buffers.items()):
            if b is not None and not isinstance(b, DTensor):
                m._buffers[key] = distribute_tensor(b, mesh, [Replicate()] * mesh.ndim)

    for name, sub in module.named_modules():
        if partition_fn is not None:
            partition_fn(name, sub, mesh)
        replicate(sub)
    if input_fn is not None:
        module.register_forward_pre_hook(lambda mod, inputs: input_fn(mod, inputs, mesh))
    if output_fn is not None:
        module.register_forward_hook(lambda mod, inputs, outputs: output_fn(mod, outputs, mesh))
    module._distribute_module_applied = True
    return module


def _factory(make, size, device_mesh, placements, dtype, requires_grad, name):
    from ... import get_default_dtype

    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    shape = tuple(int(s) for s in size)
    mesh = _default_mesh(device_mesh)
    placements = normalize_placements(placements, mesh, len(shape))
    dtype = dtype or get_default_dtype()
    if name in ("rand", "randn"):
        # drawn whole, so the pieces are those of one tensor whatever the layout
        whole = make(shape, dtype)
        local = transform(whole, mesh, shape, (Replicate(),) * mesh.ndim, placements)
    else:
        local = make(local_layout(shape, mesh, placements)[0], dtype)
    local = local.detach()
    if requires_grad:
        local.requires_grad_(True)
    return DTensor._make(local, mesh, placements, shape)


def _doc_factory(name, fill):
    from ... import empty as _empty, full as _full, rand as _rand, randn as _randn

    makers = {"zeros": lambda s, d: _full(s, 0, dtype=d), "ones": lambda s, d: _full(s, 1, dtype=d),
              "empty": lambda s, d: _empty(s, dtype=d), "rand": lambda s, d: _rand(s, dtype=d),
              "randn": lambda s, d: _randn(s, dtype=d)}
    return makers[name]


def zeros(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None,
          placements=None):
    """A DTensor of zeros of global shape ``size``.

    Args:
        size (ints): the global shape.
        requires_grad, dtype, layout: as ``ember.zeros``. Keyword-only.
        device_mesh (DeviceMesh, optional), placements (optional): the layout.

    Returns:
        DTensor

    Example::

        >>> zeros(4, 2, device_mesh=mesh, placements=[Shard(0)])  # doctest: +SKIP
    """
    return _factory(_doc_factory("zeros", 0), size, device_mesh, placements, dtype,
                    requires_grad, "zeros")


def ones(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None,
         placements=None):
    """A DTensor of ones of global shape ``size``.

    Args:
        size (ints): the global shape.
        requires_grad, dtype, layout, device_mesh, placements: as ``zeros``. Keyword-only.

    Returns:
        DTensor

    Example::

        >>> ones(4, device_mesh=mesh, placements=[Replicate()])  # doctest: +SKIP
    """
    return _factory(_doc_factory("ones", 1), size, device_mesh, placements, dtype,
                    requires_grad, "ones")


def empty(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None,
          placements=None):
    """An uninitialised DTensor of global shape ``size``.

    Args:
        size (ints): the global shape.
        requires_grad, dtype, layout, device_mesh, placements: as ``zeros``. Keyword-only.

    Returns:
        DTensor

    Example::

        >>> empty(4, device_mesh=mesh, placements=[Shard(0)]).shape  # doctest: +SKIP
        ember.Size([4])
    """
    return _factory(_doc_factory("empty", None), size, device_mesh, placements, dtype,
                    requires_grad, "empty")


def full(size, fill_value, *, requires_grad=False, dtype=None, layout=None, device_mesh=None,
         placements=None):
    """A DTensor of global shape ``size`` filled with ``fill_value``.

    Args:
        size (sequence of ints): the global shape.
        fill_value (number): the value.
        requires_grad, dtype, layout, device_mesh, placements: as ``zeros``. Keyword-only.

    Returns:
        DTensor

    Example::

        >>> full((4,), 7.0, device_mesh=mesh, placements=[Shard(0)])  # doctest: +SKIP
    """
    from ... import full as _full

    return _factory(lambda s, d: _full(s, fill_value, dtype=d), (tuple(size),), device_mesh,
                    placements, dtype, requires_grad, "full")


def rand(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None,
         placements=None):
    """A DTensor of uniform [0, 1) values: drawn whole on each rank (from its generator; seed
    the ranks alike) and cut, so the pieces are those of one tensor.

    Args:
        size (ints): the global shape.
        requires_grad, dtype, layout, device_mesh, placements: as ``zeros``. Keyword-only.

    Returns:
        DTensor

    Example::

        >>> rand(4, device_mesh=mesh, placements=[Shard(0)])  # doctest: +SKIP
    """
    return _factory(_doc_factory("rand", None), size, device_mesh, placements, dtype,
                    requires_grad, "rand")


def randn(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None,
          placements=None):
    """A DTensor of standard normal values (drawn whole and cut, as ``rand``).

    Args:
        size (ints): the global shape.
        requires_grad, dtype, layout, device_mesh, placements: as ``zeros``. Keyword-only.

    Returns:
        DTensor

    Example::

        >>> randn(4, device_mesh=mesh, placements=[Shard(0)])  # doctest: +SKIP
    """
    return _factory(_doc_factory("randn", None), size, device_mesh, placements, dtype,
                    requires_grad, "randn")
