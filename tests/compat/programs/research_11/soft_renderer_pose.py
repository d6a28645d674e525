"""A differentiable 2-D renderer toy, as inverse-graphics tutorials write one: sprites placed
by ``F.affine_grid``/``F.grid_sample`` (rotation, scale and translation from parameters,
``align_corners=False``, zeros and border padding), soft-rasterised discs and a triangle by
sigmoids of signed distances, alpha compositing front to back, an SSIM-style loss from
``avg_pool2d`` moments, pose recovery by Adam through the whole renderer, and a sampled
silhouette IoU."""
import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)
H = W = 24
ys, xs = torch.meshgrid(torch.linspace(-1, 1, H), torch.linspace(-1, 1, W), indexing="ij")
pix = torch.stack([xs, ys], -1)


def sprite():
    r = (xs ** 2 + ys ** 2).sqrt()
    rgb = torch.stack([0.5 + 0.5 * xs, 0.5 + 0.5 * ys, (1 - r).clamp(0, 1)], 0)
    alpha = torch.sigmoid((0.6 - (xs.abs() + 0.5 * ys.abs())) * 20)
    return torch.cat([rgb, alpha[None]], 0)[None]


def place(tex, angle, scale, tx, ty, padding_mode="zeros"):
    cos, sin = torch.cos(angle), torch.sin(angle)
    theta = torch.stack([torch.stack([cos / scale, -sin / scale, -tx]),
                         torch.stack([sin / scale, cos / scale, -ty])])[None]
    grid = F.affine_grid(theta, list(tex.shape), align_corners=False)
    return F.grid_sample(tex, grid, mode="bilinear", padding_mode=padding_mode, align_corners=False)


def soft_disc(center, radius, sharpness=30.0):
    d = (pix - center).norm(dim=-1) - radius
    return torch.sigmoid(-d * sharpness)


def soft_triangle(v, sharpness=30.0):
    edges = []
    for i in range(3):
        a, b = v[i], v[(i + 1) % 3]
        n = torch.stack([b[1] - a[1], a[0] - b[0]])
        n = n / n.norm()
        edges.append(((pix - a) * n).sum(-1))
    inside = torch.stack(edges).min(0).values
    return torch.sigmoid(inside * sharpness)


def composite(layers):
    out = torch.zeros(3, H, W)
    trans = torch.ones(H, W)
    for rgb, alpha in layers:
        out = out + trans * alpha * rgb
        trans = trans * (1 - alpha)
    return out, 1 - trans


def render(p):
    tex = place(sprite(), p["angle"], p["scale"], p["tx"], p["ty"])[0]
    disc = soft_disc(p["center"], p["radius"])
    tri = soft_triangle(p["tri"])
    layers = [(tex[:3], tex[3]), (torch.tensor([1.0, 0.2, 0.2])[:, None, None], 0.8 * disc),
              (torch.tensor([0.1, 0.3, 0.9])[:, None, None], 0.6 * tri)]
    return composite(layers)


def ssim_loss(a, b, C1=0.01 ** 2, C2=0.03 ** 2):
    a, b = a[None], b[None]
    mu_a, mu_b = F.avg_pool2d(a, 3, 1, 1), F.avg_pool2d(b, 3, 1, 1)
    sa = F.avg_pool2d(a * a, 3, 1, 1) - mu_a ** 2
    sb = F.avg_pool2d(b * b, 3, 1, 1) - mu_b ** 2
    sab = F.avg_pool2d(a * b, 3, 1, 1) - mu_a * mu_b
    ssim = ((2 * mu_a * mu_b + C1) * (2 * sab + C2)) / ((mu_a ** 2 + mu_b ** 2 + C1) * (sa + sb + C2))
    return (1 - ssim).mean() / 2


target_p = {"angle": torch.tensor(0.6), "scale": torch.tensor(0.7), "tx": torch.tensor(0.2),
            "ty": torch.tensor(-0.1), "center": torch.tensor([-0.4, 0.4]),
            "radius": torch.tensor(0.25), "tri": torch.tensor([[0.1, 0.5], [0.7, 0.6], [0.4, 0.9]])}
with torch.no_grad():
    target_img, target_sil = render(target_p)
print("target", target_img.shape, f"{target_img.mean().item():.6f}", f"{target_sil.sum().item():.5f}")
print("border padding sum", f"{place(sprite(), torch.tensor(0.3), torch.tensor(1.2), torch.tensor(0.5), torch.tensor(0.0), 'border').sum().item():.5f}")

params = {"angle": torch.tensor(0.2), "scale": torch.tensor(0.9), "tx": torch.tensor(0.0),
          "ty": torch.tensor(0.1), "center": torch.tensor([-0.2, 0.2]),
          "radius": torch.tensor(0.3), "tri": torch.tensor([[0.0, 0.4], [0.6, 0.5], [0.3, 0.8]])}
for v in params.values():
    v.requires_grad_(True)
opt = torch.optim.Adam(params.values(), lr=0.03)
for it in range(40):
    img, sil = render(params)
    loss = F.mse_loss(img, target_img) + 0.5 * ssim_loss(img, target_img) \
        + 0.1 * F.binary_cross_entropy(sil.clamp(1e-4, 1 - 1e-4), target_sil)
    opt.zero_grad()
    loss.backward()
    if it % 10 == 0:
        print(f"it {it} loss {loss.item():.6f} grad angle {params['angle'].grad.item():.6f} "
              f"radius {params['radius'].grad.item():.6f}")
    opt.step()
with torch.no_grad():
    img, sil = render(params)
    inter = (sil * target_sil).sum()
    iou = inter / (sil + target_sil - sil * target_sil).sum()
print(f"final iou {iou.item():.5f} angle {params['angle'].item():.5f} scale {params['scale'].item():.5f}")
print("center", params["center"].detach(), "tri", params["tri"].detach())
grid = F.affine_grid(torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]), [1, 1, 2, 3], align_corners=True)
print("identity grid", grid)
print("nearest", F.grid_sample(torch.arange(6.0).view(1, 1, 2, 3), grid * 0.9, mode="nearest", align_corners=True))
