# From https://github.com/lucidrains/rotary-embedding-torch (rotary_embedding_torch/__init__.py), commit 8bb4643d1c29f944c47d2e807452ac437689af18, MIT License, Copyright (c) 2021 Phil Wang.
from rotary_embedding_torch.rotary_embedding_torch import (
    apply_rotary_emb,
    RotaryEmbedding,
    apply_learned_rotations,
    broadcat
)
