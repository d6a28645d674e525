from .fused import (
    BNReLU2d, BNReLU3d, ConvAdd2d, ConvAddReLU2d, ConvBn1d, ConvBn2d, ConvBn3d, ConvBnReLU1d,
    ConvBnReLU2d, ConvBnReLU3d, ConvReLU1d, ConvReLU2d, ConvReLU3d, LinearBn1d,
    LinearLeakyReLU, LinearReLU, LinearTanh,
)

__all__ = ["ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d",
           "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU", "BNReLU2d", "BNReLU3d",
           "LinearBn1d", "LinearLeakyReLU", "LinearTanh", "ConvAdd2d", "ConvAddReLU2d"]
