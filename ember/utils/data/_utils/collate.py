"""``ember.utils.data._utils.collate``: PyTorch's import path for the collate functions."""

from .._collate import (
    collate, collate_float_fn, collate_int_fn, collate_numpy_array_fn, collate_numpy_scalar_fn,
    collate_str_fn, collate_tensor_fn, default_collate, default_collate_err_msg_format,
    default_collate_fn_map, default_convert, np_str_obj_array_pattern,
)

__all__ = ["collate", "collate_float_fn", "collate_int_fn", "collate_numpy_array_fn",
           "collate_numpy_scalar_fn", "collate_str_fn", "collate_tensor_fn", "default_collate",
           "default_collate_err_msg_format", "default_collate_fn_map", "default_convert",
           "np_str_obj_array_pattern"]
