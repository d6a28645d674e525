"""One program, run twice by tests/compat/test_torchvision.py: under ember's alias
(``python -m ember.compat.run cases.py ember OUT``) and on the real torch with the test shim
(``python cases.py torch OUT``). Inputs come from NumPy seeds; the ember run saves every
model's weights, the torch run loads them, so both compute the same functions. Each writes
its results (outputs and gradients) to ``OUT/<world>.npz``.
"""

import os
import pickle
import sys

import numpy as np

WORLD, OUT = sys.argv[1], sys.argv[2]
if WORLD == "torch":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_shim  # noqa: F401

import torch  # noqa: E402
import torchvision  # noqa: E402
from torchvision import datasets, models, ops, transforms, tv_tensors, utils  # noqa: E402
from torchvision.transforms import v2  # noqa: E402

R = {}
rng = np.random.RandomState(0)


def t(a, grad=False):
    x = torch.from_numpy(np.ascontiguousarray(a))
    return x.requires_grad_() if grad else x


def put(name, x):
    R[name] = x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def same_weights(name, model):
    """The ember run's weights, in both runs."""
    path = os.path.join(OUT, f"weights_{name}.npz")
    if WORLD == "ember":
        np.savez(path, **{k: v.detach().numpy() for k, v in model.state_dict().items()})
    else:
        saved = np.load(path)
        model.load_state_dict({k: torch.from_numpy(saved[k]) for k in saved.files})
    return model


def boxes(n, size=20.0):
    xy = rng.rand(n, 2) * size
    return np.concatenate([xy, xy + rng.rand(n, 2) * size / 2 + 0.5], 1).astype(np.float32)


# -- box ops and nms ---------------------------------------------------------------------------
b, s = boxes(60), rng.rand(60).astype(np.float32)
s[5] = s[6]  # a tie: the first stays first
put("nms", ops.nms(t(b), t(s), 0.3))
put("batched_nms", ops.batched_nms(t(b), t(s), t(rng.randint(0, 3, 60)), 0.5))
put("box_iou", ops.box_iou(t(b[:7]), t(b[7:12])))
put("generalized_box_iou", ops.generalized_box_iou(t(b[:7]), t(b[7:12])))
put("box_convert", ops.box_convert(t(b), "xyxy", "cxcywh"))
put("clip_boxes", ops.clip_boxes_to_image(t(b), (12, 15)))
put("remove_small", ops.remove_small_boxes(t(b), 6.0))

# -- roi_align (and its gradient) --------------------------------------------------------------
img = rng.rand(2, 3, 11, 13).astype(np.float32)
rois = np.concatenate([rng.randint(0, 2, (6, 1)), boxes(6, 12.0)], 1).astype(np.float32)
# (within the image: torchvision's pure-torch roi_align, the torch run's reference, clamps
# samples beyond the image where its native kernel reads zeros)
rois[0, 1:] = [0.5, 0.2, 25.0, 21.0]  # up to the last row and column
for aligned in (False, True):
    for sr in (2, -1):
        x = t(img, grad=True)
        y = ops.roi_align(x, t(rois), (3, 4), 0.5, sr, aligned)
        (y * t(np.arange(y.numel(), dtype=np.float32).reshape(y.shape) % 7)).sum().backward()
        put(f"roi_align_{aligned}_{sr}", y)
        put(f"roi_align_{aligned}_{sr}_grad", x.grad)
feats = {"0": t(rng.rand(1, 4, 16, 16).astype(np.float32)),
         "1": t(rng.rand(1, 4, 8, 8).astype(np.float32))}
pooler = ops.MultiScaleRoIAlign(["0", "1"], 3, 2)
put("multiscale_roi_align", pooler(feats, [t(boxes(5, 40.0))], [(64, 64)]))

# -- roi_pool, ps_roi_align, ps_roi_pool, deform_conv2d ---------------------------------------
# The torch run computes them from their definitions with torch's autograd: max and mean over
# integer bins, roi_align's samples one channel per bin, and a convolution over samples that
# grid_sample takes (bilinear, zero outside the image).


def roi_pool_ref(x, r, size, scale, mean, ps):
    ph, pw = size
    out = []
    for roi in r:
        img_k = x[int(roi[0])]
        x1, y1, x2, y2 = (int(np.floor(abs(v) * scale + 0.5) * np.sign(v)) for v in roi[1:])
        rh, rw = max(y2 - y1 + (0 if mean else 1), 1), max(x2 - x1 + (0 if mean else 1), 1)
        lim_h, lim_w = (img_k.shape[1] - 1, img_k.shape[2] - 1) if mean else img_k.shape[1:]
        cells = []
        for i in range(ph):
            for j in range(pw):
                h0 = min(max(int(np.floor(np.float32(i) * np.float32(rh) / ph)) + y1, 0), lim_h)
                h1 = min(max(int(np.ceil(np.float32(i + 1) * np.float32(rh) / ph)) + y1, 0),
                         lim_h)
                w0 = min(max(int(np.floor(np.float32(j) * np.float32(rw) / pw)) + x1, 0), lim_w)
                w1 = min(max(int(np.ceil(np.float32(j + 1) * np.float32(rw) / pw)) + x1, 0),
                         lim_w)
                chans = slice(None) if not ps else slice(i * pw + j, None, ph * pw)
                patch = img_k[chans, h0:h1, w0:w1]
                cells.append(patch.mean((1, 2)) if mean else patch.amax((1, 2)))
        out.append(torch.stack(cells, -1).reshape(-1, ph, pw))
    return torch.stack(out)


def ps_roi_align_ref(x, r, size, scale, sr):
    from torchvision.ops.roi_align import _roi_align

    ph, pw = size
    full = _roi_align.__wrapped__(x, r, scale, ph, pw, sr, True)
    c_out = x.shape[1] // (ph * pw)
    chan = torch.arange(c_out * ph * pw).reshape(c_out, ph, pw)
    i, j = torch.meshgrid(torch.arange(ph), torch.arange(pw), indexing="ij")
    return full[:, chan, i, j]


def deform_ref(x, w, off, mask, bias, stride, pad, dil, og):
    bsz, c, h, wd = x.shape
    cout, cpg, kh, kw = w.shape
    ho, wo = off.shape[-2:]
    ys = (torch.arange(ho) * stride - pad)[:, None].double()
    xs = (torch.arange(wo) * stride - pad)[None, :].double()
    cols = []
    for g in range(og):
        taps = []
        for k in range(kh * kw):
            i, j = divmod(k, kw)
            py = ys + i * dil + off[:, g * 2 * kh * kw + 2 * k]
            px = xs + j * dil + off[:, g * 2 * kh * kw + 2 * k + 1]
            grid = torch.stack([2 * px / (wd - 1) - 1, 2 * py / (h - 1) - 1], -1).to(x.dtype)
            sample = torch.nn.functional.grid_sample(
                x[:, g * c // og:(g + 1) * c // og], grid, mode="bilinear",
                padding_mode="zeros", align_corners=True)
            taps.append(sample * mask[:, g * kh * kw + k][:, None])
        cols.append(torch.stack(taps, 2))  # (B, C/og, K, Ho, Wo)
    cols = torch.cat(cols, 1).reshape(bsz, c * kh * kw, ho * wo)
    out = torch.einsum("ok,bkl->bol", w.reshape(cout, -1), cols)
    return out.reshape(bsz, cout, ho, wo) + bias[None, :, None, None]


inner = rois.copy()
inner[:, 1:] = np.minimum(inner[:, 1:], 17.0)  # (x1.5 scale ps_roi_pool: away from the edge)
feat = rng.rand(2, 8, 11, 13).astype(np.float32)
cases = {
    "roi_pool": (lambda x: ops.roi_pool(x, t(inner), (2, 3), 0.5),
                 lambda x: roi_pool_ref(x, inner, (2, 3), 0.5, False, False)),
    "ps_roi_pool": (lambda x: ops.ps_roi_pool(x, t(inner), (2, 2), 0.5),
                    lambda x: roi_pool_ref(x, inner, (2, 2), 0.5, True, True)),
    "ps_roi_align": (lambda x: ops.ps_roi_align(x, t(rois), (2, 2), 0.5, 2),
                     lambda x: ps_roi_align_ref(x, t(rois), (2, 2), 0.5, 2)),
    "ps_roi_align_adaptive": (lambda x: ops.ps_roi_align(x, t(rois), (2, 2), 0.5, -1),
                              lambda x: ps_roi_align_ref(x, t(rois), (2, 2), 0.5, -1)),
}
for name, (ours, ref) in cases.items():
    x = t(feat, grad=True)
    y = (ours if WORLD == "ember" else ref)(x)
    (y * t(np.arange(y.numel(), dtype=np.float32).reshape(y.shape) % 5)).sum().backward()
    put(name, y)
    put(name + "_grad", x.grad)
for og, use_mask in ((1, True), (2, True), (1, False)):
    dx = t(rng.rand(2, 4, 7, 8), grad=True)
    dw = t(rng.randn(6, 4, 3, 3), grad=True)
    db = t(rng.randn(6), grad=True)
    doff = t(rng.randn(2, og * 18, 4, 4) * 1.5, grad=True)
    dm = t(rng.rand(2, og * 9, 4, 4), grad=True)
    args = dict(stride=2, padding=1, dilation=1)
    if WORLD == "ember":
        y = ops.deform_conv2d(dx, doff, dw, db, mask=dm if use_mask else None, **args)
    else:
        m = dm if use_mask else torch.ones_like(dm)
        y = deform_ref(dx, dw, doff, m, db, 2, 1, 1, og)
    (y * t(np.arange(y.numel()).reshape(y.shape) % 3)).sum().backward()
    key = f"deform_{og}_{use_mask}"
    put(key, y)
    for n, v in (("x", dx), ("w", dw), ("b", db), ("off", doff)) + ((("m", dm),)
                                                                     if use_mask else ()):
        put(f"{key}_grad_{n}", v.grad)

# -- layers and losses -------------------------------------------------------------------------
torch.manual_seed(0)
fpn = same_weights("fpn", ops.FeaturePyramidNetwork([4, 8], 6))
fin = {"a": t(rng.rand(1, 4, 8, 8).astype(np.float32), grad=True),
       "b": t(rng.rand(1, 8, 4, 4).astype(np.float32), grad=True)}
fout = fpn(fin)
sum(v.sum() for v in fout.values()).backward()
put("fpn_a", fout["a"])
put("fpn_b", fout["b"])
put("fpn_grad", fin["b"].grad)
logits = t(rng.randn(5, 4).astype(np.float32), grad=True)
loss = ops.sigmoid_focal_loss(logits, t((rng.rand(5, 4) > 0.5).astype(np.float32)),
                              reduction="mean")
loss.backward()
put("focal", loss)
put("focal_grad", logits.grad)
put("stochastic_depth_eval", ops.StochasticDepth(0.5, "row").eval()(t(img)))
cna = same_weights("cna", ops.Conv2dNormActivation(3, 4, 3).eval())
put("conv_norm_act", cna(t(img)))
se = same_weights("se", ops.SqueezeExcitation(3, 2).eval())
put("squeeze_excitation", se(t(img)))

# -- classification models ---------------------------------------------------------------------
small = {
    "resnet": lambda: models.resnet.ResNet(models.resnet.BasicBlock, [1, 1, 1, 1],
                                           num_classes=5),
    "mobilenet_v3_small": lambda: models.mobilenet_v3_small(weights=None, num_classes=5),
    "squeezenet": lambda: models.squeezenet1_1(weights=None, num_classes=5),
    "densenet": lambda: models.DenseNet(8, (2, 2), 16, num_classes=5),
    "vit": lambda: models.VisionTransformer(32, 8, 2, 2, 16, 32, num_classes=5),
    "swin": lambda: models.SwinTransformer([4, 4], 16, [1, 1], [1, 2], [2, 2],
                                           num_classes=5),
    "convnext": lambda: models.ConvNeXt([models.convnext.CNBlockConfig(8, 16, 1),
                                         models.convnext.CNBlockConfig(16, None, 1)],
                                        num_classes=5),
}
x_np = rng.rand(2, 3, 32, 32).astype(np.float32)
for name, make in small.items():
    torch.manual_seed(0)
    m = same_weights(name, make()).eval()
    x = t(x_np, grad=True)
    y = m(x)
    (y * t(np.arange(10, dtype=np.float32).reshape(2, 5))).sum().backward()
    put(f"model_{name}", y)
    put(f"model_{name}_grad", x.grad)
    first = next(p for p in m.parameters() if p.grad is not None)
    put(f"model_{name}_wgrad", first.grad)

# -- detection: eval outputs, and train losses with every anchor and proposal sampled ----------
torch.manual_seed(0)
det = models.detection.fasterrcnn_mobilenet_v3_large_fpn(
    weights=None, weights_backbone=None, num_classes=3, min_size=64, max_size=80,
    rpn_pre_nms_top_n_test=50, rpn_post_nms_top_n_test=20, box_detections_per_img=10,
    rpn_pre_nms_top_n_train=50, rpn_post_nms_top_n_train=20, box_score_thresh=0.0,
    rpn_batch_size_per_image=10 ** 6, box_batch_size_per_image=10 ** 6)
det = same_weights("fasterrcnn", det)
images = [t(rng.rand(3, 64, 72).astype(np.float32))]
targets = [{"boxes": t(np.array([[8.0, 6.0, 40.0, 50.0], [30.0, 20.0, 70.0, 60.0]],
                                np.float32)), "labels": t(np.array([1, 2]))}]
det.eval()
with torch.no_grad():
    out = det(images)[0]
for k, v in out.items():
    put(f"det_eval_{k}", v)
det.train()
losses = det(images, targets)
sum(losses.values()).backward()
for k, v in losses.items():
    put(f"det_train_{k}", v)
put("det_train_grad", det.roi_heads.box_predictor.cls_score.weight.grad)

# -- transforms v1 and v2, tv_tensors ----------------------------------------------------------
from PIL import Image  # noqa: E402

pil = Image.fromarray((rng.rand(20, 24, 3) * 255).astype(np.uint8))
v1 = transforms.Compose([transforms.Resize(16), transforms.CenterCrop(14),
                         transforms.ToTensor(), transforms.Normalize([0.5] * 3, [0.25] * 3)])
put("v1_pil", v1(pil))
put("v1_tensor", transforms.Compose([transforms.Resize((10, 12), antialias=True),
                                     transforms.Grayscale()])(t(img[0])))
put("v1_functional", transforms.functional.adjust_brightness(
    transforms.functional.rotate(t(img[0]), 30.0), 1.3))
v2_pipe = v2.Compose([v2.ToImage(), v2.Resize((16, 18), antialias=True),
                      v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.4] * 3, [0.2] * 3)])
put("v2_pil", v2_pipe(pil))
image = tv_tensors.Image(t(img[0]))
bx = tv_tensors.BoundingBoxes(t(boxes(3, 10.0)), format="XYXY", canvas_size=(11, 13))
mask = tv_tensors.Mask(t((img[1, 0] > 0.5).astype(np.uint8)))
flipped = v2.RandomHorizontalFlip(p=1.0)(image, bx, mask)
resized = v2.Resize((22, 26), antialias=True)(*flipped)
put("tv_image", resized[0])
put("tv_boxes", resized[1])
put("tv_mask", resized[2])
put("tv_types", [type(o).__name__ == n for o, n in zip(resized, ["Image", "BoundingBoxes",
                                                                  "Mask"])])
put("v2_box_convert", v2.functional.convert_bounding_box_format(bx, new_format="CXCYWH"))

# -- datasets from files in their on-disk formats ----------------------------------------------
root = os.path.join(OUT, f"data_{WORLD}")
raw = os.path.join(root, "MNIST", "raw")
os.makedirs(raw, exist_ok=True)
digits = (rng.rand(4, 28, 28) * 255).astype(np.uint8)
for split, n in (("train", 4), ("t10k", 4)):
    with open(os.path.join(raw, f"{split}-images-idx3-ubyte"), "wb") as f:
        f.write(np.array([0x803, n, 28, 28], ">i4").tobytes() + digits[:n].tobytes())
    with open(os.path.join(raw, f"{split}-labels-idx1-ubyte"), "wb") as f:
        f.write(np.array([0x801, n], ">i4").tobytes() + np.arange(n, dtype=np.uint8).tobytes())
mnist = datasets.MNIST(root, train=True, transform=transforms.ToTensor())
put("mnist", torch.stack([mnist[i][0] for i in range(4)]))
put("mnist_labels", [mnist[i][1] for i in range(4)])
cifar = os.path.join(root, "cifar-10-batches-py")
os.makedirs(cifar, exist_ok=True)
pixels = (rng.rand(3, 3072) * 255).astype(np.uint8)
batches = [f"data_batch_{i}" for i in range(1, 6)]
for name in batches + ["test_batch"]:
    with open(os.path.join(cifar, name), "wb") as f:
        pickle.dump({"data": pixels, "labels": [0, 1, 2]}, f)
with open(os.path.join(cifar, "batches.meta"), "wb") as f:
    pickle.dump({"label_names": ["a", "b", "c"]}, f)
# our files, so no checksums (None: the file need only exist)
datasets.CIFAR10.train_list = [[n, None] for n in batches]
datasets.CIFAR10.test_list = [["test_batch", None]]
datasets.CIFAR10.meta = {"filename": "batches.meta", "key": "label_names", "md5": None}
cif = datasets.CIFAR10(root, train=False, transform=transforms.ToTensor())
put("cifar", torch.stack([cif[i][0] for i in range(3)]))
for cls in ("cat", "dog"):
    os.makedirs(os.path.join(root, "folder", cls), exist_ok=True)
    for i in range(2):
        Image.fromarray((rng.rand(9, 7, 3) * 255).astype(np.uint8)).save(
            os.path.join(root, "folder", cls, f"{i}.png"))
folder = datasets.ImageFolder(os.path.join(root, "folder"), transform=transforms.ToTensor())
loader = torch.utils.data.DataLoader(folder, batch_size=4)
xb, yb = next(iter(loader))
put("image_folder", xb)
put("image_folder_labels", yb)
fake = datasets.FakeData(3, (3, 8, 8), 4, transform=transforms.ToTensor())
put("fakedata_shapes", [list(fake[i][0].shape) for i in range(3)])

# -- utils -------------------------------------------------------------------------------------
grid = utils.make_grid(t(img.repeat(3, 0)), nrow=4, padding=1, normalize=True)
put("make_grid", grid)
utils.save_image(t(img[0]), os.path.join(OUT, f"saved_{WORLD}.png"))
put("save_image", np.asarray(Image.open(os.path.join(OUT, f"saved_{WORLD}.png"))))
put("draw_boxes", utils.draw_bounding_boxes(t((img[0] * 255).astype(np.uint8)),
                                            t(boxes(2, 8.0)), colors="red"))

np.savez(os.path.join(OUT, f"{WORLD}.npz"), **R)
print(WORLD, "done", len(R), torchvision.__version__)
