"""Passes over fx graphs: ``shape_prop.ShapeProp`` records each value's shape and dtype;
``split_module.split_module`` cuts a graph into submodules."""

from . import shape_prop, split_module  # noqa: F401
