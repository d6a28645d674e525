# From https://github.com/jadore801120/attention-is-all-you-need-pytorch (transformer/__init__.py), commit 132907dd272e2cc92e3c10e6c4e783a87ff8893d, MIT License, Copyright (c) 2017 Victor Huang.
import transformer.Constants
import transformer.Modules
import transformer.Layers
import transformer.SubLayers
import transformer.Models
import transformer.Translator
import transformer.Optim

__all__ = [
    transformer.Constants, transformer.Modules, transformer.Layers,
    transformer.SubLayers, transformer.Models, transformer.Optim,
    transformer.Translator]
