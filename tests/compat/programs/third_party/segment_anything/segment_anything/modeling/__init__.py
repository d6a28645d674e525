# From facebookresearch/segment-anything, segment_anything/modeling/__init__.py at commit dca509fe793f601edb92606367a655c15ac00fdf (Apache-2.0, Copyright (c) Meta Platforms, Inc. and affiliates; unchanged).
# Copyright (c) Meta Platforms, Inc. and affiliates.
# All rights reserved.

# This source code is licensed under the license found in the
# LICENSE file in the root directory of this source tree.

from .sam import Sam
from .image_encoder import ImageEncoderViT
from .mask_decoder import MaskDecoder
from .prompt_encoder import PromptEncoder
from .transformer import TwoWayTransformer
