"""``parallelize_module``: apply tensor-parallel styles to a module and its submodules."""

from __future__ import annotations

import fnmatch
import warnings

from .style import ParallelStyle

__all__ = ["parallelize_module"]


def parallelize_module(module, device_mesh=None, parallelize_plan=None, *, src_data_rank=0):
    """Lay ``module`` out for tensor parallelism by ``parallelize_plan``.

    Args:
        module (nn.Module): changed in place.
        device_mesh (DeviceMesh, optional): a 1-D mesh (default: one of the whole world).
        parallelize_plan (ParallelStyle or dict): a style for ``module`` itself, or
            ``{submodule path: style}``; a path's parts may use ``*`` wildcards
            (``"layers.*.attention.wq"``).
        src_data_rank (int or None): whose values the distributed parameters take (None:
            each rank its own). Keyword-only.

    Returns:
        nn.Module: ``module``.

    Raises:
        ValueError: a mesh with more than one dimension. TypeError: a plan that is neither
        a style nor a dict.

    Example::

        >>> plan = {"w1": ColwiseParallel(), "w2": RowwiseParallel()}  # doctest: +SKIP
        >>> parallelize_module(mlp, mesh, plan)  # doctest: +SKIP
    """
    from .._api import _default_mesh

    mesh = _default_mesh(device_mesh)
    if mesh.ndim != 1:
        raise ValueError(f"parallelize_module: expected a 1-D device mesh, got "
                         f"{mesh.ndim} dimensions; pass the tensor-parallel sub-mesh "
                         "(mesh['tp'])")
    if parallelize_plan is None:
        warnings.warn("No parallelize_plan is provided and auto-parallel is not supported at "
                      "the moment, so this parallelize_module call will do nothing.",
                      stacklevel=2)
        return module
    if isinstance(parallelize_plan, ParallelStyle):
        parallelize_plan.src_data_rank = src_data_rank
        return parallelize_plan._apply(module, mesh)
    if not isinstance(parallelize_plan, dict):
        raise TypeError("Expect Union[ParallelStyle, Dict[str, ParallelStyle]] for "
                        f"parallelize_plan, {type(parallelize_plan)} found!")
    for path, style in parallelize_plan.items():
        head, _, rest = path.partition(".")
        matched = [(n, c) for n, c in module.named_children() if fnmatch.fnmatch(n, head)]
        if not matched:
            warnings.warn(f"Parallelize plan key '{path}' could not be resolved: no submodule "
                          f"matching token '{head}' in module {module}, skipping this plan "
                          "entry.", stacklevel=2)
            continue
        for _, child in matched:
            if rest:
                parallelize_module(child, mesh, {rest: style}, src_data_rank=src_data_rank)
            else:
                parallelize_module(child, mesh, style, src_data_rank=src_data_rank)
    return module
