"""A stand-in for the parts of torchvision that pytorch/examples' programs (MNIST, VAE, DCGAN,
super-resolution, fast neural style, siamese network, ImageNet) touch, for machines without
torchvision (the tests put its folder on PYTHONPATH).

Its datasets are synthetic (seeded NumPy images, nothing is downloaded) and its transforms
do only what those programs ask of them; it works under PyTorch and under ember's alias, so
a program's output can be compared between the two.
"""

from . import datasets, models, transforms, utils  # noqa: F401
