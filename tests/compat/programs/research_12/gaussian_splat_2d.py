"""2-D Gaussian splatting the way the "gsplat in pure PyTorch" tutorials and
OutofAi/2D-Gaussian-Splatting write it: Gaussians with ``logit``-space colours and
opacities, ``log``-space scales and a rotation angle, covariances ``R S S^T R^T`` built by
``torch.stack`` of ``cos``/``sin`` and batched ``@``, their inverses by
``torch.linalg.inv`` and determinants by ``torch.linalg.det``, front-to-back alpha
compositing of depth-sorted Gaussians (``argsort`` on distinct depths, ``cumprod`` of
``1 - alpha`` shifted by ``torch.cat``), an L1 + D-SSIM loss with a Gaussian window by
``F.conv2d`` with ``groups``, per-group learning rates, densification by cloning the
Gaussians with the largest positional gradients, and the image saved through
``torch.save`` of a ``uint8`` tensor."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
H = W = 16
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


def target():
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, H), torch.linspace(-1, 1, W), indexing="ij")
    img = torch.zeros(3, H, W)
    img[0] = torch.exp(-((xs - 0.3) ** 2 + (ys + 0.2) ** 2) / 0.1)
    img[1] = ((xs + 0.4).abs() < 0.3).float() * ((ys - 0.3).abs() < 0.4).float()
    img[2] = 0.5 + 0.5 * torch.sin(3 * xs) * torch.cos(2 * ys)
    return img.permute(1, 2, 0)


class Gaussians(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.means = nn.Parameter(torch.rand(n, 2) * 2 - 1)
        self.log_scales = nn.Parameter(torch.full((n, 2), math.log(0.25)) + 0.1 * torch.randn(n, 2))
        self.rot = nn.Parameter(torch.rand(n) * math.pi)
        self.color_logits = nn.Parameter(torch.logit(torch.rand(n, 3).clamp(0.05, 0.95)))
        self.opacity_logits = nn.Parameter(torch.logit(torch.full((n, 1), 0.5)))
        self.register_buffer("depth", torch.randperm(n).float() / n)

    def covariances(self):
        c, s = torch.cos(self.rot), torch.sin(self.rot)
        R = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)
        S = torch.diag_embed(torch.exp(self.log_scales))
        RS = R @ S
        return RS @ RS.transpose(-1, -2)

    def forward(self):
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, H), torch.linspace(-1, 1, W), indexing="ij")
        pix = torch.stack([xs, ys], -1).reshape(-1, 2)                   # (P, 2)
        cov = self.covariances()
        inv = torch.linalg.inv(cov)
        order = torch.argsort(self.depth)
        d = pix[:, None, :] - self.means[order][None]                    # (P, N, 2)
        maha = torch.einsum("pni,nij,pnj->pn", d, inv[order], d)
        alpha = torch.sigmoid(self.opacity_logits[order, 0])[None] * torch.exp(-0.5 * maha)
        alpha = alpha.clamp(max=0.99)
        T = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1 - alpha[:, :-1]], 1), 1)
        weights = alpha * T
        img = weights @ torch.sigmoid(self.color_logits[order])
        return img.reshape(H, W, 3), weights.sum(1).reshape(H, W), torch.linalg.det(cov)


def gaussian_window(size=5, sigma=1.5):
    gauss = torch.tensor([math.exp(-(x - size // 2) ** 2 / (2 * sigma ** 2)) for x in range(size)])
    g1 = (gauss / gauss.sum()).unsqueeze(1)
    return (g1 @ g1.t()).float().unsqueeze(0).unsqueeze(0).expand(3, 1, size, size).contiguous()


def ssim(img1, img2, window, size=5):
    mu1 = F.conv2d(img1, window, padding=size // 2, groups=3)
    mu2 = F.conv2d(img2, window, padding=size // 2, groups=3)
    s11 = F.conv2d(img1 * img1, window, padding=size // 2, groups=3) - mu1.pow(2)
    s22 = F.conv2d(img2 * img2, window, padding=size // 2, groups=3) - mu2.pow(2)
    s12 = F.conv2d(img1 * img2, window, padding=size // 2, groups=3) - mu1 * mu2
    C1, C2 = 0.01 ** 2, 0.03 ** 2
    return (((2 * mu1 * mu2 + C1) * (2 * s12 + C2)) / ((mu1.pow(2) + mu2.pow(2) + C1) * (s11 + s22 + C2))).mean()


def make_optimizer(model):
    return torch.optim.Adam([
        {"params": [model.means], "lr": 1e-2, "name": "xyz"},
        {"params": [model.log_scales, model.rot], "lr": 5e-3, "name": "shape"},
        {"params": [model.color_logits, model.opacity_logits], "lr": 2.5e-2, "name": "appearance"},
    ], lr=0.0, eps=1e-15)


gt = target().to(device)
model = Gaussians(24).to(device)
window = gaussian_window()
optimizer = make_optimizer(model)
print([(grp["name"], grp["lr"], len(grp["params"])) for grp in optimizer.param_groups])
lambda_dssim = 0.2
grad_accum = torch.zeros(24)
for it in range(1, 41):
    img, acc, det = model()
    l1 = (img - gt).abs().mean()
    s = ssim(img.permute(2, 0, 1)[None], gt.permute(2, 0, 1)[None], window)
    loss = (1.0 - lambda_dssim) * l1 + lambda_dssim * (1.0 - s)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_accum += model.means.grad.norm(dim=-1)
    optimizer.step()
    if it % 10 == 0:
        psnr = -10 * torch.log10(F.mse_loss(img.detach(), gt))
        print(f"it {it} loss {loss.item():.5f} l1 {l1.item():.5f} ssim {s.item():.5f} psnr {psnr.item():.3f} "
              f"coverage {acc.mean().item():.4f} det-range {det.min().item():.6f} {det.max().item():.6f}")
    if it == 20:
        # densify: clone the four Gaussians whose means moved under the largest gradients
        top = grad_accum.topk(4).indices
        with torch.no_grad():
            new = Gaussians(28)
            for name, p in model.named_parameters():
                getattr(new, name).copy_(torch.cat([p, p[top]], 0))
            new.means[24:] += 0.02
            new.depth.copy_(torch.cat([model.depth, model.depth[top] + 0.5 / 24]))
        print("densified from", sorted(top.tolist()), "->", new.means.shape[0], "gaussians")
        model, optimizer, grad_accum = new, make_optimizer(new), torch.zeros(28)

with torch.no_grad():
    img, _, _ = model()
    u8 = (img.clamp(0, 1) * 255).round().to(torch.uint8)
    torch.save(u8, "render.pt")
    back = torch.load("render.pt")
    print("saved", back.dtype, tuple(back.shape), "within half a level:",
          bool(((back.float() - img.clamp(0, 1) * 255).abs() <= 0.5).all()), "render mean", img.mean().item())
