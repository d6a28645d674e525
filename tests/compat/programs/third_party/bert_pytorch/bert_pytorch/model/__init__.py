# From https://github.com/codertimo/BERT-pytorch (bert_pytorch/model/__init__.py), commit d10dc4f9d5a6f2ca74380f62039526eb7277c671, Apache License 2.0.
from .bert import BERT
from .language_model import BERTLM
