"""A model zoo the way pytorch-image-models (timm) builds one: a registry filled by a
``@register_model`` decorator, ``create_model``/``list_models`` with wildcard filters and
keyword overrides, default configs, ``named_apply`` initialisation with ``trunc_normal_``,
DropPath (stochastic depth), ``forward_features``/``forward_head``/``reset_classifier``,
layer-decayed parameter groups, and a "pretrained" checkpoint loaded through a filter
function with ``strict=False``."""
import fnmatch
import math
import os
import sys
from collections import OrderedDict, defaultdict
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F

_model_entrypoints = {}
_module_to_models = defaultdict(set)
_model_default_cfgs = {}


def register_model(fn):
    mod = sys.modules[fn.__module__]
    module_name_split = fn.__module__.split(".")
    module_name = module_name_split[-1] if len(module_name_split) else ""
    model_name = fn.__name__
    if hasattr(mod, "__all__"):
        mod.__all__.append(model_name)
    else:
        mod.__all__ = [model_name]
    _model_entrypoints[model_name] = fn
    _module_to_models[module_name].add(model_name)
    return fn


def list_models(filter="", exclude_filters=""):
    models = _model_entrypoints.keys()
    if filter:
        models = fnmatch.filter(models, filter)
    if exclude_filters:
        if not isinstance(exclude_filters, (tuple, list)):
            exclude_filters = [exclude_filters]
        for xf in exclude_filters:
            exclude = fnmatch.filter(models, xf)
            models = set(models).difference(exclude)
    return sorted(models)


def create_model(model_name, pretrained=False, checkpoint_path="", **kwargs):
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    if model_name not in _model_entrypoints:
        raise RuntimeError("Unknown model (%s)" % model_name)
    model = _model_entrypoints[model_name](pretrained=pretrained, **kwargs)
    if checkpoint_path:
        load_checkpoint(model, checkpoint_path)
    return model


def _cfg(url="", **kwargs):
    return {"url": url, "num_classes": 10, "input_size": (3, 16, 16), "crop_pct": 0.875,
            "interpolation": "bicubic", "mean": (0.485, 0.456, 0.406),
            "std": (0.229, 0.224, 0.225), "first_conv": "stem.0", "classifier": "head",
            **kwargs}


def named_apply(fn, module, name="", depth_first=True, include_root=False):
    if not depth_first and include_root:
        fn(module=module, name=name)
    for child_name, child_module in module.named_children():
        child_name = ".".join((name, child_name)) if name else child_name
        named_apply(fn=fn, module=child_module, name=child_name, depth_first=depth_first,
                    include_root=True)
    if depth_first and include_root:
        fn(module=module, name=name)
    return module


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


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None,
                 act_layer=nn.GELU, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        return self.drop2(self.fc2(self.drop1(self.act(self.fc1(x)))))


class MixerBlock(nn.Module):
    def __init__(self, dim, seq_len, mlp_ratio=(0.5, 4.0), norm_layer=partial(nn.LayerNorm,
                 eps=1e-6), act_layer=nn.GELU, drop_path=0.0):
        super().__init__()
        tokens_dim, channels_dim = [int(x * dim) for x in mlp_ratio]
        self.norm1 = norm_layer(dim)
        self.mlp_tokens = Mlp(seq_len, tokens_dim, act_layer=act_layer)
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.norm2 = norm_layer(dim)
        self.mlp_channels = Mlp(dim, channels_dim, act_layer=act_layer)

    def forward(self, x):
        x = x + self.drop_path(self.mlp_tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2))
        x = x + self.drop_path(self.mlp_channels(self.norm2(x)))
        return x


class MlpMixer(nn.Module):
    def __init__(self, num_classes=10, img_size=16, in_chans=3, patch_size=4, num_blocks=2,
                 embed_dim=32, mlp_ratio=(0.5, 4.0), drop_path_rate=0.0, global_pool="avg"):
        super().__init__()
        self.num_classes = num_classes
        self.global_pool = global_pool
        self.num_features = self.embed_dim = embed_dim
        self.stem = nn.Conv2d(in_chans, embed_dim, patch_size, patch_size)
        num_patches = (img_size // patch_size) ** 2
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, num_blocks)]
        self.blocks = nn.Sequential(*[MixerBlock(embed_dim, num_patches, mlp_ratio,
                                                 drop_path=dpr[i]) for i in range(num_blocks)])
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()
        self.init_weights()

    def init_weights(self):
        named_apply(partial(_init_weights, head_bias=-math.log(self.num_classes)), module=self)

    def get_classifier(self):
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        self.num_classes = num_classes
        if global_pool is not None:
            self.global_pool = global_pool
        self.head = nn.Linear(self.embed_dim, num_classes) if num_classes > 0 else nn.Identity()

    def forward_features(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        x = self.blocks(x)
        return self.norm(x)

    def forward_head(self, x, pre_logits: bool = False):
        if self.global_pool == "avg":
            x = x.mean(dim=1)
        return x if pre_logits else self.head(x)

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


def _init_weights(module, name, head_bias=0.0):
    if isinstance(module, nn.Linear):
        if name.startswith("head"):
            nn.init.zeros_(module.weight)
            nn.init.constant_(module.bias, head_bias)
        else:
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                if "mlp" in name:
                    nn.init.normal_(module.bias, std=1e-6)
                else:
                    nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Conv2d):
        nn.init.trunc_normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, (nn.LayerNorm, nn.BatchNorm2d, nn.GroupNorm)):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, drop_path=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.act1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.act2 = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.drop_path = drop_path

    def zero_init_last(self):
        nn.init.zeros_(self.bn2.weight)

    def forward(self, x):
        shortcut = x
        x = self.act1(self.bn1(self.conv1(x)))
        x = self.bn2(self.conv2(x))
        if self.drop_path is not None:
            x = self.drop_path(x)
        if self.downsample is not None:
            shortcut = self.downsample(shortcut)
        x += shortcut
        return self.act2(x)


class ResNet(nn.Module):
    def __init__(self, layers=(1, 1), channels=(8, 16), num_classes=10, in_chans=3,
                 drop_path_rate=0.0, zero_init_last=True):
        super().__init__()
        self.num_classes = num_classes
        self.stem = nn.Sequential(nn.Conv2d(in_chans, channels[0], 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(channels[0]), nn.ReLU(inplace=True))
        stages, inplanes, net_block_idx = [], channels[0], 0
        net_num_blocks = sum(layers)
        for stage_idx, (n, c) in enumerate(zip(layers, channels)):
            stride = 1 if stage_idx == 0 else 2
            blocks = []
            for block_idx in range(n):
                downsample = None
                if block_idx == 0 and (stride != 1 or inplanes != c):
                    downsample = nn.Sequential(OrderedDict([
                        ("0", nn.Conv2d(inplanes, c, 1, stride, bias=False)),
                        ("1", nn.BatchNorm2d(c))]))
                dpr = drop_path_rate * net_block_idx / (net_num_blocks - 1)
                blocks.append(BasicBlock(inplanes, c, stride if block_idx == 0 else 1,
                                         downsample, DropPath(dpr) if dpr > 0.0 else None))
                inplanes = c
                net_block_idx += 1
            stages.append((f"layer{stage_idx + 1}", nn.Sequential(*blocks)))
        for name, stage in stages:
            self.add_module(name, stage)
        self.num_features = channels[-1]
        self.global_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(self.num_features, num_classes)
        for n, m in self.named_modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        if zero_init_last:
            for m in self.modules():
                if hasattr(m, "zero_init_last"):
                    m.zero_init_last()

    def forward_features(self, x):
        x = self.stem(x)
        x = self.layer1(x)
        return self.layer2(x)

    def forward(self, x):
        x = self.global_pool(self.forward_features(x)).flatten(1)
        return self.fc(x)


def _create(cls, variant, pretrained=False, pretrained_filter_fn=None, **kwargs):
    model = cls(**kwargs)
    model.default_cfg = model.pretrained_cfg = _model_default_cfgs[variant]
    if pretrained:
        state_dict = torch.load(model.default_cfg["file"], map_location="cpu")
        if pretrained_filter_fn is not None:
            state_dict = pretrained_filter_fn(state_dict, model)
        classifier = model.default_cfg["classifier"]
        if kwargs.get("num_classes", 10) != model.default_cfg["num_classes"]:
            state_dict.pop(classifier + ".weight")
            state_dict.pop(classifier + ".bias")
            strict = False
        else:
            strict = True
        incompatible = model.load_state_dict(state_dict, strict=strict)
        print("pretrained", variant, "missing", sorted(incompatible.missing_keys),
              "unexpected", incompatible.unexpected_keys)
    return model


def checkpoint_filter_fn(state_dict, model):
    out = {}
    for k, v in state_dict.items():
        if k.startswith("patch_embed.proj"):
            k = k.replace("patch_embed.proj", "stem")
        out[k] = v
    return out


_model_default_cfgs.update({
    "mixer_t4_16": _cfg(file="mixer_t4_16.pth"),
    "mixer_t4_16_dp": _cfg(),
    "resnet_tiny": _cfg(first_conv="stem.0", classifier="fc", interpolation="bilinear"),
    "resnet_tiny_wide": _cfg(first_conv="stem.0", classifier="fc"),
})


@register_model
def mixer_t4_16(pretrained=False, **kwargs):
    return _create(MlpMixer, "mixer_t4_16", pretrained, checkpoint_filter_fn, **kwargs)


@register_model
def mixer_t4_16_dp(pretrained=False, **kwargs):
    return _create(MlpMixer, "mixer_t4_16_dp", pretrained, drop_path_rate=0.2, **kwargs)


@register_model
def resnet_tiny(pretrained=False, **kwargs):
    return _create(ResNet, "resnet_tiny", pretrained, **kwargs)


@register_model
def resnet_tiny_wide(pretrained=False, **kwargs):
    return _create(ResNet, "resnet_tiny_wide", pretrained, channels=(12, 24), **kwargs)


def param_groups_layer_decay(model, weight_decay=0.05, layer_decay=0.75):
    num_layers = len(model.blocks) + 1
    layer_scales = [layer_decay ** (num_layers - i) for i in range(num_layers + 1)]
    groups = {}
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim == 1:
            g_decay, this_decay = "no_decay", 0.0
        else:
            g_decay, this_decay = "decay", weight_decay
        if name.startswith("stem"):
            layer_id = 0
        elif name.startswith("blocks"):
            layer_id = int(name.split(".")[1]) + 1
        else:
            layer_id = num_layers
        group_name = "layer_%d_%s" % (layer_id, g_decay)
        if group_name not in groups:
            groups[group_name] = {"lr_scale": layer_scales[layer_id],
                                  "weight_decay": this_decay, "params": [], "param_names": []}
        groups[group_name]["params"].append(param)
        groups[group_name]["param_names"].append(name)
    return list(groups.values())


def main():
    torch.manual_seed(42)
    print("all models:", list_models())
    print("mixers:", list_models("mixer*"), "no dp:", list_models("*", exclude_filters="*_dp"))
    try:
        create_model("vit_huge")
    except RuntimeError as e:
        print("error:", e)

    # "pretrained" weights saved under upstream names, renamed by the filter function
    src = create_model("mixer_t4_16")
    sd = {k.replace("stem", "patch_embed.proj"): v for k, v in src.state_dict().items()}
    torch.save(sd, "mixer_t4_16.pth")
    model = create_model("mixer_t4_16", pretrained=True, num_classes=5)
    same = all(torch.equal(model.state_dict()[k], v) for k, v in src.state_dict().items()
               if not k.startswith("head"))
    print("body restored:", same, "head:", tuple(model.get_classifier().weight.shape))
    print("cfg:", model.default_cfg["input_size"], model.default_cfg["interpolation"])
    print("head bias init:", f"{src.head.bias[0].item():.6f}")

    x = torch.randn(6, 3, 16, 16)
    y = torch.randint(0, 5, (6,))
    groups = param_groups_layer_decay(model)
    for g in groups:
        g["lr"] = 1e-2 * g["lr_scale"]
    print("groups:", [(len(g["params"]), round(g["lr_scale"], 4), g["weight_decay"])
                      for g in groups])
    opt = torch.optim.AdamW([{k: v for k, v in g.items() if k != "param_names"}
                             for g in groups])
    model.train()
    for step in range(5):
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        print(f"mixer step {step} loss {loss.item():.6f}")
    feats = model.forward_features(x)
    print("features", tuple(feats.shape), "pre_logits",
          tuple(model.forward_head(feats, pre_logits=True).shape))
    model.reset_classifier(0)
    print("after reset:", model.get_classifier(), tuple(model(x).shape))

    dp = create_model("mixer_t4_16_dp", num_classes=3, drop_path_rate=None)
    print(dp.blocks[1].drop_path, type(dp.blocks[0].drop_path).__name__)
    dp.train()
    torch.manual_seed(1)
    a = dp(x)
    dp.eval()
    b = dp(x)
    print("drop path train/eval differ:", not torch.allclose(a, b), f"{b.sum().item():.5f}")

    for name in list_models("resnet*"):
        net = create_model(name, num_classes=4, drop_path_rate=0.1)
        n_params = sum(p.numel() for p in net.parameters() if p.requires_grad)
        sgd = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                              weight_decay=1e-4)
        net.train()
        for step in range(3):
            out = net(x)
            loss = F.cross_entropy(out, y % 4)
            sgd.zero_grad()
            loss.backward()
            sgd.step()
        net.eval()
        with torch.no_grad():
            probs = net(x).softmax(-1)
        print(f"{name}: params {n_params} loss {loss.item():.6f} top1",
              probs.argmax(-1).tolist(), f"bn mean {net.stem[1].running_mean.abs().sum():.6f}")
    print(create_model("resnet_tiny").layer2[0].downsample)
    os.remove("mixer_t4_16.pth")


if __name__ == "__main__":
    main()
