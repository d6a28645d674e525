"""Feature extraction and saliency the way pytorch-grad-cam and interpretability tutorials
write them with module hooks: ``ActivationsAndGradients`` (a forward hook keeping outputs, a
tensor ``register_hook`` for their gradients), Grad-CAM and Grad-CAM++ heat-maps upsampled
with ``F.interpolate``, guided backpropagation through ``register_full_backward_hook``
returning a new ``grad_input``, an ``IntermediateLayerGetter``-style feature extractor,
forward pre-hooks with kwargs, global module hooks, hook ordering with ``prepend``, and the
handles' ``remove``."""
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)


class SmallNet(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv1", nn.Conv2d(3, 8, 3, padding=1)), ("relu1", nn.ReLU()),
            ("pool1", nn.MaxPool2d(2)),
            ("conv2", nn.Conv2d(8, 16, 3, padding=1)), ("relu2", nn.ReLU()),
            ("conv3", nn.Conv2d(16, 16, 3, padding=1)), ("relu3", nn.ReLU()),
        ]))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.classifier = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.features(x)
        return self.classifier(torch.flatten(self.avgpool(x), 1))


class ActivationsAndGradients:
    def __init__(self, model, target_layers, reshape_transform=None):
        self.model = model
        self.gradients, self.activations = [], []
        self.reshape_transform = reshape_transform
        self.handles = []
        for target_layer in target_layers:
            self.handles.append(target_layer.register_forward_hook(self.save_activation))
            self.handles.append(target_layer.register_forward_hook(self.save_gradient))

    def save_activation(self, module, input, output):
        activation = output
        if self.reshape_transform is not None:
            activation = self.reshape_transform(activation)
        self.activations.append(activation.cpu().detach())

    def save_gradient(self, module, input, output):
        if not hasattr(output, "requires_grad") or not output.requires_grad:
            return

        def _store_grad(grad):
            if self.reshape_transform is not None:
                grad = self.reshape_transform(grad)
            self.gradients = [grad.cpu().detach()] + self.gradients

        output.register_hook(_store_grad)

    def __call__(self, x):
        self.gradients, self.activations = [], []
        return self.model(x)

    def release(self):
        for handle in self.handles:
            handle.remove()


class ClassifierOutputTarget:
    def __init__(self, category):
        self.category = category

    def __call__(self, model_output):
        if len(model_output.shape) == 1:
            return model_output[self.category]
        return model_output[:, self.category]


def scale_cam_image(cam, target_size=None):
    result = []
    for img in cam:
        img = img - np.min(img)
        img = img / (1e-7 + np.max(img))
        result.append(img)
    result = np.float32(result)
    if target_size is not None:
        result = F.interpolate(torch.from_numpy(result)[:, None], size=target_size,
                               mode="bilinear", align_corners=False)[:, 0].numpy()
    return result


class GradCAM:
    def __init__(self, model, target_layers, plus_plus=False):
        self.model = model.eval()
        self.target_layers = target_layers
        self.plus_plus = plus_plus
        self.activations_and_grads = ActivationsAndGradients(model, target_layers)

    def get_cam_weights(self, grads, activations):
        if not self.plus_plus:
            return np.mean(grads, axis=(2, 3))
        grads_power_2 = grads ** 2
        grads_power_3 = grads_power_2 * grads
        sum_activations = np.sum(activations, axis=(2, 3))
        aij = grads_power_2 / (2 * grads_power_2 + sum_activations[:, :, None, None]
                               * grads_power_3 + 1e-7)
        aij = np.where(grads != 0, aij, 0)
        weights = np.maximum(grads, 0) * aij
        return np.sum(weights, axis=(2, 3))

    def __call__(self, input_tensor, targets=None):
        input_tensor = input_tensor.requires_grad_(True)
        outputs = self.activations_and_grads(input_tensor)
        if targets is None:
            target_categories = np.argmax(outputs.cpu().data.numpy(), axis=-1)
            targets = [ClassifierOutputTarget(c) for c in target_categories]
        self.model.zero_grad()
        loss = sum(target(output) for target, output in zip(targets, outputs))
        loss.backward(retain_graph=True)
        cams = []
        for acts, grads in zip(self.activations_and_grads.activations,
                               self.activations_and_grads.gradients):
            acts, grads = acts.numpy(), grads.numpy()
            weights = self.get_cam_weights(grads, acts)
            cam = np.maximum((weights[:, :, None, None] * acts).sum(axis=1), 0)
            cams.append(scale_cam_image(cam, input_tensor.shape[-2:])[:, None])
        return np.mean(np.concatenate(cams, axis=1), axis=1), outputs

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        self.activations_and_grads.release()


class IntermediateLayerGetter(nn.ModuleDict):
    def __init__(self, model, return_layers):
        orig_return_layers = return_layers
        return_layers = {str(k): str(v) for k, v in return_layers.items()}
        layers = OrderedDict()
        for name, module in model.named_children():
            layers[name] = module
            if name in return_layers:
                del return_layers[name]
            if not return_layers:
                break
        super().__init__(layers)
        self.return_layers = orig_return_layers

    def forward(self, x):
        out = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out


def make_batch(n):
    # the class is the quadrant holding a bright blob
    labels = torch.randint(0, 4, (n,))
    x = 0.3 * torch.randn(n, 3, 16, 16)
    for i, c in enumerate(labels.tolist()):
        r, q = (c // 2) * 8, (c % 2) * 8
        x[i, :, r + 2:r + 6, q + 2:q + 6] += 2.0
    return x, labels


model = SmallNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(15):
    x, labels = make_batch(16)
    loss = F.cross_entropy(model(x), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"trained, last loss {loss.item():.6f}")
images, labels = make_batch(2)
print("labels", labels.tolist())

with GradCAM(model, [model.features.conv3]) as cam:
    heat, logits = cam(images)
print("predicted", logits.argmax(-1).tolist(), "cam", heat.shape, heat.dtype)
print("cam row means", [f"{v:.5f}" for v in heat.mean(axis=(1, 2)).tolist()])
print("cam [0, 8, ::4]", [f"{v:.5f}" for v in heat[0, 8, ::4].tolist()])
print("hooks left", len(model.features.conv3._forward_hooks))

with GradCAM(model, [model.features.conv2, model.features.conv3], plus_plus=True) as campp:
    heat_pp, _ = campp(images, targets=[ClassifierOutputTarget(1), ClassifierOutputTarget(2)])
print("grad-cam++ means", [f"{v:.5f}" for v in heat_pp.mean(axis=(1, 2)).tolist()])

# guided backpropagation: ReLUs pass only positive gradients
handles = []


def relu_backward_hook(module, grad_input, grad_output):
    return (torch.clamp(grad_input[0], min=0.0),)


for m in model.modules():
    if isinstance(m, nn.ReLU):
        handles.append(m.register_full_backward_hook(relu_backward_hook))
x = images.detach().clone().requires_grad_(True)
out = model(x)
out[0, out[0].argmax()].backward()
guided = x.grad.clone()
for h in handles:
    h.remove()
x.grad = None
out = model(x)
out[0, out[0].argmax()].backward()
print(f"guided grad sum {guided.sum().item():.6f} abs {guided.abs().sum().item():.6f}")
print(f"plain grad sum {x.grad.sum().item():.6f}  differ {not torch.allclose(guided, x.grad)}")

# a feature extractor over named children
body = IntermediateLayerGetter(model.features, {"relu1": "low", "relu3": "high"})
feats = body(images)
print({k: tuple(v.shape) for k, v in feats.items()}, list(body.keys()))

# forward pre-hooks with kwargs, prepend ordering, global hooks, backward pre-hooks
calls = []


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, scale=1.0):
        return self.lin(x) * scale


m = Scaled()


def pre_hook_kwargs(module, args, kwargs):
    calls.append("pre_kwargs")
    kwargs = dict(kwargs)
    kwargs["scale"] = kwargs.get("scale", 1.0) * 2
    return args, kwargs


def pre_hook_first(module, args):
    calls.append("pre_first")


def fwd_hook_kwargs(module, args, kwargs, output):
    calls.append(f"fwd scale={kwargs['scale']}")
    return output + 1


h1 = m.register_forward_pre_hook(pre_hook_kwargs, with_kwargs=True)
h2 = m.register_forward_pre_hook(pre_hook_first, prepend=True)
h3 = m.register_forward_hook(fwd_hook_kwargs, with_kwargs=True)
g = nn.modules.module.register_module_forward_hook(
    lambda mod, inp, out: calls.append(f"global {type(mod).__name__}"))
bp = m.lin.register_full_backward_pre_hook(
    lambda mod, grad_output: calls.append("bwd_pre") or (grad_output[0] * 0.5,))
v = torch.ones(2, 4, requires_grad=True)
y = m(v, scale=3.0)
y.sum().backward()
print(calls)
print(f"y {y.sum().item():.6f} grad {v.grad.sum().item():.6f}")
for h in (h1, h2, h3, g, bp):
    h.remove()
calls.clear()
v.grad = None
y = m(v, scale=3.0)
y.sum().backward()
print(calls, f"y {y.sum().item():.6f} grad {v.grad.sum().item():.6f}")

# a state_dict hook and load_state_dict post hook
def post_load(module, incompatible_keys):
    print("loaded", type(module).__name__, "missing", incompatible_keys.missing_keys)


m.register_load_state_dict_post_hook(post_load)
m.load_state_dict({"lin.weight": m.lin.weight.detach().clone()}, strict=False)
