"""Tensor printing (placeholder formatting replaced by the full PyTorch-style printer)."""


def tensor_repr(t):
    return f"tensor({t._data.tolist()})"
