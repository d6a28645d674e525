# From https://github.com/codertimo/BERT-pytorch (bert_pytorch/model/embedding/segment.py), commit d10dc4f9d5a6f2ca74380f62039526eb7277c671, Apache License 2.0.
import torch.nn as nn


class SegmentEmbedding(nn.Embedding):
    def __init__(self, embed_size=512):
        super().__init__(3, embed_size, padding_idx=0)
