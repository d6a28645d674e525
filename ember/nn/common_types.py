"""Type aliases for layer arguments that take a number or a tuple of numbers, as in
``torch.nn.common_types`` (``_size_2_t`` is "an int or a pair of ints", and so on)."""

# typing.Union, not X | Y: these aliases are generic and get subscripted below
# ruff: noqa: UP007

from __future__ import annotations

from typing import TypeVar, Union

from .._core.tensor import Tensor

T = TypeVar("T")

_scalar_or_tuple_any_t = Union[T, tuple[T, ...]]
_scalar_or_tuple_1_t = Union[T, tuple[T]]
_scalar_or_tuple_2_t = Union[T, tuple[T, T]]
_scalar_or_tuple_3_t = Union[T, tuple[T, T, T]]
_scalar_or_tuple_4_t = Union[T, tuple[T, T, T, T]]
_scalar_or_tuple_5_t = Union[T, tuple[T, T, T, T, T]]
_scalar_or_tuple_6_t = Union[T, tuple[T, T, T, T, T, T]]

# sizes: kernel sizes, strides, paddings, output sizes
_size_any_t = _scalar_or_tuple_any_t[int]
_size_1_t = _scalar_or_tuple_1_t[int]
_size_2_t = _scalar_or_tuple_2_t[int]
_size_3_t = _scalar_or_tuple_3_t[int]
_size_4_t = _scalar_or_tuple_4_t[int]
_size_5_t = _scalar_or_tuple_5_t[int]
_size_6_t = _scalar_or_tuple_6_t[int]

# sizes where None keeps the input's size (adaptive pooling)
_size_any_opt_t = _scalar_or_tuple_any_t[Union[int, None]]
_size_2_opt_t = _scalar_or_tuple_2_t[Union[int, None]]
_size_3_opt_t = _scalar_or_tuple_3_t[Union[int, None]]

# ratios (fractional pooling)
_ratio_2_t = _scalar_or_tuple_2_t[float]
_ratio_3_t = _scalar_or_tuple_3_t[float]
_ratio_any_t = _scalar_or_tuple_any_t[float]

_tensor_list_t = _scalar_or_tuple_any_t[Tensor]

# a result that may come with indices (max pooling with return_indices=True)
_maybe_indices_t = _scalar_or_tuple_2_t[Tensor]
