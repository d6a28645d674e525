"""The core types: dtype, device, Size, Storage and Tensor (fields and dunders only)."""
