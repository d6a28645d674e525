# From https://github.com/lucidrains/denoising-diffusion-pytorch (denoising_diffusion_pytorch/version.py), commit faed4db28e724735323fa91c70aa9b28a6e1cbac, MIT License.
__version__ = '2.3.1'
