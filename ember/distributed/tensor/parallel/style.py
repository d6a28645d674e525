"""Tensor-parallel styles: how ``parallelize_module`` lays out one module's parameters,
inputs and outputs (PyTorch's ``torch.distributed.tensor.parallel.style``).

NOTE [ Tensor-parallel styles ]
A style's ``_apply(module, mesh)`` replaces the module's parameters by DTensors and hooks
its forward: inputs arriving as plain tensors are read as the pieces of ``input_layouts``
(``DTensor.from_local``) and redistributed to what the module wants; outputs are
redistributed to ``output_layouts`` and, with ``use_local_output``, handed on as local
pieces. ``ColwiseParallel`` cuts a ``Linear``'s output features (weight and bias rows) or an
``Embedding``'s embedding dimension; ``RowwiseParallel`` cuts a ``Linear``'s input features
(its output is a Partial sum, all-reduced to ``Replicate`` by default) or an ``Embedding``'s
rows; ``SequenceParallel`` keeps parameters whole and runs on pieces of the sequence
dimension (LayerNorm, Dropout, RMSNorm).
"""

from __future__ import annotations

from ..placement_types import Replicate, Shard

__all__ = ["ColwiseParallel", "ParallelStyle", "PrepareModuleInput", "PrepareModuleInputOutput",
           "PrepareModuleOutput", "RowwiseParallel", "SequenceParallel"]


def _dt():
    from .._api import DTensor

    return DTensor


def _as_tuple(layouts):
    if layouts is None:
        return None
    return tuple(layouts) if isinstance(layouts, (list, tuple)) else (layouts,)


def _to_dtensor(x, mesh, given, wanted):
    """``x`` (a plain piece laid out as ``given`` or a DTensor) as a DTensor laid out as
    ``wanted``."""
    DTensor = _dt()
    if not isinstance(x, DTensor):
        from .... import Tensor

        if not isinstance(x, Tensor) or given is None:
            return x
        x = DTensor.from_local(x, mesh, (given,), run_check=False)
    if wanted is not None and x.placements != (wanted,):
        x = x.redistribute(placements=(wanted,))
    return x


def _layouts_repr(v):
    return repr(tuple(v)) if isinstance(v, tuple) else repr(v)


class ParallelStyle:
    """Base class of the tensor-parallel styles: subclasses define ``_apply(module, mesh)``.

    Example::

        >>> isinstance(ColwiseParallel(), ParallelStyle)
        True
    """

    src_data_rank = 0

    def _apply(self, module, device_mesh):
        raise NotImplementedError(f"{type(self).__name__} must define _apply(module, mesh)")


def _distribute(module, mesh, name, placement, src_data_rank):
    from ....nn import Parameter
    from .._api import distribute_tensor

    p = module._parameters.get(name)
    if p is None or isinstance(p, _dt()):
        return
    dt = distribute_tensor(p.detach(), mesh, [placement], src_data_rank=src_data_rank)
    module._parameters[name] = Parameter(dt, p.requires_grad)


class ColwiseParallel(ParallelStyle):
    """Cut a ``Linear``'s output features (or an ``Embedding``'s embedding dimension) across
    the ranks.

    Args:
        input_layouts (Placement, optional): how plain inputs are laid out (default
            ``Replicate()``). Keyword-only.
        output_layouts (Placement, optional): the output's layout (default ``Shard(-1)``).
            Keyword-only.
        use_local_output (bool): hand on the output's local piece. Default: True.

    Example::

        >>> ColwiseParallel().output_layouts
        (Shard(dim=-1),)
    """

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=True):
        self.input_layouts = (input_layouts or Replicate(),)
        self.output_layouts = (output_layouts or Shard(-1),)
        self.desired_input_layouts = (Replicate(),)
        self.use_local_output = use_local_output

    def _apply(self, module, device_mesh):
        from ....nn import Embedding, Linear

        if isinstance(module, Linear):
            _distribute(module, device_mesh, "weight", Shard(0), self.src_data_rank)
            _distribute(module, device_mesh, "bias", Shard(0), self.src_data_rank)
        elif isinstance(module, Embedding):
            _distribute(module, device_mesh, "weight", Shard(1), self.src_data_rank)
        else:
            raise NotImplementedError(f"{type(self).__name__} currently only support nn.Linear "
                                      "and nn.Embedding!")
        _hook_io(module, device_mesh, self.input_layouts[0], self.desired_input_layouts[0],
                 self.output_layouts[0], self.use_local_output)
        return module

    def __repr__(self):
        return (f"{type(self).__name__}(input_layouts={self.input_layouts}, "
                f"output_layouts={self.output_layouts}, use_local_output={self.use_local_output})")


class RowwiseParallel(ParallelStyle):
    """Cut a ``Linear``'s input features (or an ``Embedding``'s rows) across the ranks; the
    partial outputs are summed into ``output_layouts``.

    Args:
        input_layouts (Placement, optional): how plain inputs are laid out (default
            ``Shard(-1)``). Keyword-only.
        output_layouts (Placement, optional): the output's layout (default ``Replicate()``).
            Keyword-only.
        use_local_output (bool): hand on the output's local piece. Default: True.

    Example::

        >>> RowwiseParallel().output_layouts
        (Replicate(),)
    """

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=True):
        self.input_layouts = (input_layouts or Shard(-1),)
        self.output_layouts = (output_layouts or Replicate(),)
        self.use_local_output = use_local_output

    def _apply(self, module, device_mesh):
        from ....nn import Embedding, Linear

        if isinstance(module, Linear):
            _distribute(module, device_mesh, "weight", Shard(1), self.src_data_rank)
            _distribute(module, device_mesh, "bias", Replicate(), self.src_data_rank)
            desired = Shard(-1)
        elif isinstance(module, Embedding):
            _distribute(module, device_mesh, "weight", Shard(0), self.src_data_rank)
            desired = Replicate()
        else:
            raise NotImplementedError(f"{type(self).__name__} currently only support nn.Linear "
                                      "and nn.Embedding!")
        _hook_io(module, device_mesh, self.input_layouts[0], desired, self.output_layouts[0],
                 self.use_local_output)
        return module

    __repr__ = ColwiseParallel.__repr__


def _hook_io(module, mesh, given, wanted, out_layout, use_local):
    def pre(mod, args):
        if not args:
            return None
        x = args[0]
        if isinstance(x, _dt()):
            x = _to_dtensor(x, mesh, None, wanted)
        else:
            wanted_here = wanted
            if isinstance(wanted, Shard):
                wanted_here = Shard(wanted.dim % max(x.dim(), 1))
            g = Shard(given.dim % max(x.dim(), 1)) if isinstance(given, Shard) else given
            x = _to_dtensor(x, mesh, g, wanted_here)
        return (x,) + tuple(args[1:])

    def post(mod, args, out):
        if isinstance(out, _dt()):
            target = out_layout
            if isinstance(target, Shard):
                target = Shard(target.dim % max(out.ndim, 1))
            if out.placements != (target,):
                out = out.redistribute(placements=(target,))
            return out.to_local() if use_local else out
        return out

    module.register_forward_pre_hook(pre)
    module.register_forward_hook(post)


class SequenceParallel(ParallelStyle):
    """Run a module on pieces of the sequence dimension with its parameters replicated
    (``LayerNorm``, ``RMSNorm``, ``Dropout``): plain inputs are read as ``Shard(sequence_dim)``.

    Args:
        sequence_dim (int): the sequence dimension. Default: 1. Keyword-only.
        use_local_output (bool): hand on the output's local piece. Default: False.

    Example::

        >>> SequenceParallel()
        SequenceParallel(sequence_dim=1, use_local_output=False)
    """

    def __init__(self, *, sequence_dim: int = 1, use_local_output: bool = False):
        self.sequence_dim = sequence_dim
        self.use_local_output = use_local_output

    def _apply(self, module, device_mesh):
        for name in list(module._parameters):
            _distribute(module, device_mesh, name, Replicate(), self.src_data_rank)
        seq = Shard(self.sequence_dim)

        def pre(mod, args):
            out = []
            for x in args:
                if isinstance(x, _dt()):
                    out.append(x)
                else:
                    from .... import Tensor

                    out.append(_dt().from_local(x, device_mesh, (seq,), run_check=False)
                               if isinstance(x, Tensor) else x)
            return tuple(out)

        def post(mod, args, out):
            return out.to_local() if self.use_local_output and isinstance(out, _dt()) else out

        module.register_forward_pre_hook(pre)
        module.register_forward_hook(post)
        return module

    def __repr__(self):
        return (f"SequenceParallel(sequence_dim={self.sequence_dim}, "
                f"use_local_output={self.use_local_output})")


class PrepareModuleInput(ParallelStyle):
    """Lay out a module's inputs before its forward: each positional input given as
    ``input_layouts[i]`` is redistributed to ``desired_input_layouts[i]`` (None: left as is);
    keyword inputs likewise by name.

    Args:
        input_layouts, desired_input_layouts (Placement or tuple): per positional input.
        input_kwarg_layouts, desired_input_kwarg_layouts (dict): per keyword input.
        use_local_output (bool): hand the module local pieces. Default: False.

    Raises:
        AssertionError: the two layouts differ in length.

    Example::

        >>> PrepareModuleInput(input_layouts=Shard(0),
        ...                    desired_input_layouts=Replicate()).desired_input_layouts
        (Replicate(),)
    """

    def __init__(self, *, input_layouts=None, desired_input_layouts=None,
                 input_kwarg_layouts=None, desired_input_kwarg_layouts=None,
                 use_local_output=False):
        self.input_layouts = _as_tuple(input_layouts)
        self.desired_input_layouts = _as_tuple(desired_input_layouts)
        self.input_kwarg_layouts = dict(input_kwarg_layouts or {})
        self.desired_input_kwarg_layouts = dict(desired_input_kwarg_layouts or {})
        self.use_local_output = use_local_output
        if self.input_layouts is not None:
            assert self.desired_input_layouts is not None, \
                "desired module inputs should not be None!"
            assert len(self.input_layouts) == len(self.desired_input_layouts), \
                "input_layouts and desired_input_layouts should have same length!"
        assert len(self.input_kwarg_layouts) == len(self.desired_input_kwarg_layouts), \
            "input_kwarg_layouts and desired_input_kwarg_layouts should have same length!"

    def _prepare(self, x, given, wanted, mesh):
        if given is None:
            return x
        x = _to_dtensor(x, mesh, given, wanted)
        if self.use_local_output and isinstance(x, _dt()):
            return x.to_local()
        return x

    def _inputs(self, args, kwargs, mesh):
        if self.input_layouts is not None:
            if len(args) != len(self.input_layouts):
                raise ValueError("module inputs and input_layouts should have same length!")
            args = tuple(self._prepare(x, g, w, mesh)
                         for x, g, w in zip(args, self.input_layouts, self.desired_input_layouts))
        kwargs = dict(kwargs)
        for k, g in self.input_kwarg_layouts.items():
            if k in kwargs:
                kwargs[k] = self._prepare(kwargs[k], g, self.desired_input_kwarg_layouts.get(k),
                                          mesh)
        return args, kwargs

    def _apply(self, module, device_mesh):
        if self.input_kwarg_layouts:
            module.register_forward_pre_hook(
                lambda mod, args, kwargs: self._inputs(args, kwargs, device_mesh),
                with_kwargs=True)
        else:
            module.register_forward_pre_hook(
                lambda mod, args: self._inputs(args, {}, device_mesh)[0])
        return module

    def __repr__(self):
        return (f"PrepareModuleInput(input_layouts={self.input_layouts}, "
                f"desired_input_layouts={self.desired_input_layouts}, "
                f"input_kwarg_layouts={self.input_kwarg_layouts}, "
                f"desired_input_kwarg_layouts={self.desired_input_kwarg_layouts}, "
                f"use_local_output={self.use_local_output})")


class PrepareModuleOutput(ParallelStyle):
    """Lay out a module's outputs after its forward: each output given as
    ``output_layouts[i]`` is redistributed to ``desired_output_layouts[i]``.

    Args:
        output_layouts, desired_output_layouts (Placement or tuple): per output. Keyword-only.
        use_local_output (bool): hand on local pieces. Default: True.

    Raises:
        AssertionError: the two layouts differ in length.

    Example::

        >>> PrepareModuleOutput(output_layouts=Shard(0),
        ...                     desired_output_layouts=Replicate()).output_layouts
        (Shard(dim=0),)
    """

    def __init__(self, *, output_layouts, desired_output_layouts, use_local_output=True):
        self.output_layouts = _as_tuple(output_layouts)
        self.desired_output_layouts = _as_tuple(desired_output_layouts)
        self.use_local_output = use_local_output
        assert len(self.output_layouts) == len(self.desired_output_layouts), \
            "output_layouts and desired_output_layouts should have same length!"

    def _outputs(self, outputs, mesh):
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if len(outs) != len(self.output_layouts):
            raise ValueError("module outputs and output_layouts should have same length!")
        done = []
        for x, g, w in zip(outs, self.output_layouts, self.desired_output_layouts):
            if g is not None:
                x = _to_dtensor(x, mesh, g, w)
                if self.use_local_output and isinstance(x, _dt()):
                    x = x.to_local()
            done.append(x)
        return done[0] if single else tuple(done)

    def _apply(self, module, device_mesh):
        module.register_forward_hook(lambda mod, args, out: self._outputs(out, device_mesh))
        return module

    def __repr__(self):
        return (f"PrepareModuleOutput(output_layouts={self.output_layouts}, "
                f"desired_output_layouts={self.desired_output_layouts}, "
                f"use_local_output={self.use_local_output})")


class PrepareModuleInputOutput(ParallelStyle):
    """``PrepareModuleInput`` and ``PrepareModuleOutput`` on one module.

    Args:
        input_layouts, desired_input_layouts: as ``PrepareModuleInput``. Keyword-only.
        input_kwarg_layouts, desired_input_kwarg_layouts: as ``PrepareModuleInput``.
        use_local_input (bool): hand the module local pieces. Default: False.
        output_layouts, desired_output_layouts, use_local_output: as ``PrepareModuleOutput``.

    Example::

        >>> s = PrepareModuleInputOutput(
        ...     input_layouts=Shard(0), desired_input_layouts=Replicate(),
        ...     output_layouts=Replicate(), desired_output_layouts=Shard(0))
        >>> s.prepare_module_output.desired_output_layouts
        (Shard(dim=0),)
    """

    def __init__(self, *, input_layouts=None, desired_input_layouts=None,
                 input_kwarg_layouts=None, desired_input_kwarg_layouts=None,
                 use_local_input=False, output_layouts, desired_output_layouts,
                 use_local_output=True):
        self.prepare_module_input = PrepareModuleInput(
            input_layouts=input_layouts, desired_input_layouts=desired_input_layouts,
            input_kwarg_layouts=input_kwarg_layouts,
            desired_input_kwarg_layouts=desired_input_kwarg_layouts,
            use_local_output=use_local_input)
        self.prepare_module_output = PrepareModuleOutput(
            output_layouts=output_layouts, desired_output_layouts=desired_output_layouts,
            use_local_output=use_local_output)

    def _apply(self, module, device_mesh):
        self.prepare_module_input._apply(module, device_mesh)
        self.prepare_module_output._apply(module, device_mesh)
        return module

