"""Model-zoo code the way pytorch-image-models writes a ConvNeXt: ``DropPath`` (stochastic
depth with ``x.new_empty(...).bernoulli_(keep_prob).div_(keep_prob)``) over a linear
``torch.linspace`` decay rule, ``LayerScale`` gammas, a channels-last ``LayerNorm2d``,
``default_cfg``/``pretrained_cfg`` dicts, a registry with ``create_model(**kwargs)``,
``reset_classifier(0)`` leaving an ``nn.Identity`` head, ``forward_features``/``forward_head``,
``param_groups_weight_decay`` (no decay on 1-D parameters and names in ``no_weight_decay()``),
layer-wise lr decay groups, and "pretrained" weights fetched by
``torch.hub.load_state_dict_from_url`` from a ``file://`` URL into a local hub cache."""
import contextlib
import io
import os
import tempfile
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F

_model_entrypoints = {}


def register_model(fn):
    _model_entrypoints[fn.__name__] = fn
    return fn


def create_model(name, pretrained=False, **kwargs):
    if name not in _model_entrypoints:
        raise RuntimeError(f"Unknown model ({name})")
    return _model_entrypoints[name](pretrained=pretrained, **kwargs)


def drop_path(x, drop_prob: float = 0.0, training: bool = False, scale_by_keep: bool = True):
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob: float = 0.0, scale_by_keep: bool = True):
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)

    def extra_repr(self):
        return f"drop_prob={round(self.drop_prob, 3):0.3f}"


class LayerNorm2d(nn.LayerNorm):
    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim, drop_path=0.0, ls_init_value=1e-6):
        super().__init__()
        self.conv_dw = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.gamma = nn.Parameter(ls_init_value * torch.ones(dim)) if ls_init_value > 0 else None
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.conv_dw(x).permute(0, 2, 3, 1)
        x = self.mlp(self.norm(x))
        if self.gamma is not None:
            x = x.mul(self.gamma)
        return self.drop_path(x.permute(0, 3, 1, 2)) + shortcut


class ConvNeXt(nn.Module):
    def __init__(self, in_chans=3, num_classes=5, depths=(2, 2), dims=(8, 16),
                 drop_path_rate=0.0, ls_init_value=1e-6, head_init_scale=1.0):
        super().__init__()
        self.num_classes = num_classes
        self.stem = nn.Sequential(nn.Conv2d(in_chans, dims[0], 2, stride=2),
                                  LayerNorm2d(dims[0], eps=1e-6))
        dp_rates = [x.tolist() for x in torch.linspace(0, drop_path_rate, sum(depths)).split(depths)]
        stages, prev = [], dims[0]
        for i, (d, dim) in enumerate(zip(depths, dims)):
            down = nn.Identity() if i == 0 else nn.Sequential(LayerNorm2d(prev, eps=1e-6),
                                                              nn.Conv2d(prev, dim, 2, stride=2))
            stages.append(nn.Sequential(down, *[ConvNeXtBlock(dim, dp_rates[i][j], ls_init_value)
                                                for j in range(d)]))
            prev = dim
        self.stages = nn.Sequential(*stages)
        self.num_features = prev
        self.norm_pre = nn.Identity()
        self.head = nn.Sequential()
        self.head.add_module("global_pool", nn.AdaptiveAvgPool2d(1))
        self.head.add_module("norm", LayerNorm2d(prev, eps=1e-6))
        self.head.add_module("flatten", nn.Flatten(1))
        self.head.add_module("drop", nn.Dropout(0.0))
        self.head.add_module("fc", nn.Linear(prev, num_classes) if num_classes > 0 else nn.Identity())
        self.apply(self._init_weights)
        if isinstance(self.head.fc, nn.Linear):
            self.head.fc.weight.data.mul_(head_init_scale)
            self.head.fc.bias.data.mul_(head_init_scale)

    @staticmethod
    def _init_weights(m):
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.trunc_normal_(m.weight, std=0.02)
            nn.init.zeros_(m.bias)

    @torch.jit.ignore
    def no_weight_decay(self):
        return {"stem.1.weight"}

    def get_classifier(self):
        return self.head.fc

    def reset_classifier(self, num_classes=0):
        self.num_classes = num_classes
        self.head.fc = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def forward_features(self, x):
        return self.norm_pre(self.stages(self.stem(x)))

    def forward_head(self, x, pre_logits: bool = False):
        x = self.head.flatten(self.head.norm(self.head.global_pool(x)))
        return x if pre_logits else self.head.fc(self.head.drop(x))

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


HUB_DIR = tempfile.mkdtemp()
WEIGHTS = os.path.join(tempfile.mkdtemp(), "convnext_pico-abc123.pth")
default_cfgs = {"convnext_pico": {"url": "file://" + WEIGHTS, "num_classes": 5,
                                  "input_size": (3, 16, 16), "mean": (0.485, 0.456, 0.406),
                                  "std": (0.229, 0.224, 0.225), "first_conv": "stem.0",
                                  "classifier": "head.fc"}}


@register_model
def convnext_pico(pretrained=False, **kwargs):
    model = ConvNeXt(**{"depths": (2, 2), "dims": (8, 16), **kwargs})
    model.default_cfg = model.pretrained_cfg = default_cfgs["convnext_pico"]
    if pretrained:
        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            sd = torch.hub.load_state_dict_from_url(model.default_cfg["url"], map_location="cpu",
                                                    progress=False, check_hash=False)
        print(said.getvalue().replace(WEIGHTS, "<weights>").replace(HUB_DIR, "<hub>"), end="")
        if model.num_classes != model.default_cfg["num_classes"]:
            sd = {k: v for k, v in sd.items() if not k.startswith("head.fc")}
        print("load:", model.load_state_dict(sd, strict=False))
    return model


def param_groups_weight_decay(model, weight_decay=1e-5, no_weight_decay_list=()):
    no_weight_decay_list = set(no_weight_decay_list)
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias") or name in no_weight_decay_list:
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": no_decay, "weight_decay": 0.0}, {"params": decay, "weight_decay": weight_decay}]


def layer_id(name, num_layers):
    if name.startswith("stem"):
        return 0
    if name.startswith("stages"):
        return int(name.split(".")[1]) + 1
    return num_layers - 1


torch.manual_seed(0)
torch.hub.set_dir(HUB_DIR)
print("hub dir is ours", torch.hub.get_dir() == HUB_DIR)
model = create_model("convnext_pico", drop_path_rate=0.2, ls_init_value=0.5)
print(model.stages[1][2])
print([m.drop_prob for m in model.modules() if isinstance(m, DropPath)])
print(model.default_cfg["input_size"], model.get_classifier())
torch.save(model.state_dict(), WEIGHTS)

x = torch.randn(6, 3, 16, 16)
y = torch.tensor([0, 1, 2, 3, 4, 0])
groups = param_groups_weight_decay(model, 0.05, model.no_weight_decay())
print("groups", [len(g["params"]) for g in groups], [g["weight_decay"] for g in groups])
opt = torch.optim.AdamW(groups, lr=2e-3)
model.train()
for step in range(4):
    torch.manual_seed(step)
    loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.5f} gamma {model.stages[0][1].gamma[:2].tolist()}")

torch.manual_seed(0)
fresh = create_model("convnext_pico", pretrained=True, drop_path_rate=0.2, ls_init_value=0.5)
print("cached files", sorted(os.listdir(os.path.join(HUB_DIR, "checkpoints"))))
fresh.eval()
print("pretrained logits", fresh(x[:2]))
feat = create_model("convnext_pico", pretrained=True, num_classes=0)
print("feature model", feat.get_classifier(), feat(x[:2]).shape,
      torch.allclose(feat(x[:2]), fresh.forward_head(fresh.forward_features(x[:2]), pre_logits=True)))
feat.reset_classifier(3)
print(feat.head)

num_layers = len(model.stages) + 2
lr_groups = {}
for name, p in model.named_parameters():
    lid = layer_id(name, num_layers)
    scale = 0.7 ** (num_layers - 1 - lid)
    lr_groups.setdefault(lid, {"params": [], "lr_scale": scale, "names": []})
    lr_groups[lid]["params"].append(p)
    lr_groups[lid]["names"].append(name)
print({k: (round(v["lr_scale"], 4), len(v["names"])) for k, v in sorted(lr_groups.items())})
try:
    create_model("convnext_huge")
except RuntimeError as e:
    print("error:", e)
