"""Rotations and orthogonal matrices the way pose-estimation and Lie-group code (pytorch3d's
``so3_exp_map``/``so3_log_map``, lietorch-style tutorials, the parametrizations tutorial)
writes it: ``hat`` maps built by ``torch.stack``, the exponential by Rodrigues' formula
against ``torch.linalg.matrix_exp``, the logarithm through ``acos`` of a clamped trace,
``nn.utils.parametrizations.orthogonal`` under its ``matrix_exp``, ``cayley`` and
``householder`` maps, ``right_inverse`` assignment, rotation averaging and Procrustes by
``torch.linalg.svd`` with a determinant sign fix, rotation fitting by gradient descent on
axis-angle vectors, ``torch.func.jacrev``/``hessian``/``linearize`` of the geodesic
distance, and the 6-D continuous representation with Gram-Schmidt (float64)."""
import math

import torch
import torch.nn as nn
import torch.nn.utils.parametrize as P
from torch.func import hessian, jacrev, linearize
from torch.nn.utils.parametrizations import orthogonal

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)


def hat(v):
    x, y, z = v.unbind(-1)
    o = torch.zeros_like(x)
    return torch.stack([torch.stack([o, -z, y], -1), torch.stack([z, o, -x], -1),
                        torch.stack([-y, x, o], -1)], -2)


def so3_exp_map(log_rot, eps=1e-4):
    nrms = (log_rot * log_rot).sum(1)
    rot_angles = torch.clamp(nrms, eps).sqrt()
    rot_angles_inv = 1.0 / rot_angles
    fac1 = rot_angles_inv * rot_angles.sin()
    fac2 = rot_angles_inv * rot_angles_inv * (1.0 - rot_angles.cos())
    skews = hat(log_rot)
    skews_square = torch.bmm(skews, skews)
    return (fac1[:, None, None] * skews + fac2[:, None, None] * skews_square
            + torch.eye(3, dtype=log_rot.dtype, device=log_rot.device)[None])


def so3_rotation_angle(R, eps=1e-4, cos_angle=False):
    rot_trace = R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2]
    phi_cos = (rot_trace - 1.0) * 0.5
    if cos_angle:
        return phi_cos
    return torch.acos(phi_cos.clamp(-1.0 + eps, 1.0 - eps))


def so3_log_map(R, eps=1e-4):
    phi = so3_rotation_angle(R, eps)
    phi_sin = torch.sin(phi)
    phi_factor = torch.empty_like(phi)
    ok_denom = phi_sin.abs() > (0.5 * eps)
    phi_factor[~ok_denom] = 0.5 + (phi[~ok_denom] ** 2) * (1.0 / 12)
    phi_factor[ok_denom] = phi[ok_denom] / (2.0 * phi_sin[ok_denom])
    log_rot_hat = phi_factor[:, None, None] * (R - R.permute(0, 2, 1))
    return torch.stack([log_rot_hat[:, 2, 1], log_rot_hat[:, 0, 2], log_rot_hat[:, 1, 0]], -1)


v = torch.randn(4, 3)
R = so3_exp_map(v)
print("exp: orthogonal", torch.allclose(R @ R.transpose(1, 2), torch.eye(3).expand(4, 3, 3), atol=1e-12),
      "det", torch.linalg.det(R).tolist())
print("Rodrigues vs matrix_exp", (R - torch.linalg.matrix_exp(hat(v))).abs().max().item() < 1e-12)
print("log(exp(v)) == v:", torch.allclose(so3_log_map(R), v, atol=1e-8), "angles", so3_rotation_angle(R).tolist())
print("matrix_exp of a batch", torch.linalg.matrix_exp(torch.tensor([[[0.0, 1.0], [-1.0, 0.0]]])).tolist())

for orth_map in ("matrix_exp", "cayley", "householder"):
    torch.manual_seed(1)
    layer = orthogonal(nn.Linear(4, 4), orthogonal_map=orth_map)
    Q = layer.weight
    print(f"{orth_map:11s} orthogonal {torch.allclose(Q.T @ Q, torch.eye(4), atol=1e-10)} "
          f"original {tuple(layer.parametrizations.weight.original.shape)} det {torch.linalg.det(Q).item():.6f}")
    target = so3_exp_map(torch.tensor([[0.3, -0.2, 0.5]]))[0]
    target4 = torch.block_diag(target, -torch.ones(1))     # (the maps start at det -1 here)
    opt = torch.optim.Adam(layer.parameters(), lr=0.05)
    for _ in range(25):
        loss = (layer.weight - target4).pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"{orth_map:11s} fit loss {loss.item():.6f}")
    with torch.no_grad():
        layer.weight = torch.eye(4)
    print(f"{orth_map:11s} right_inverse to identity: {torch.allclose(layer.weight, torch.eye(4), atol=1e-10)}")
print("parametrized", P.is_parametrized(layer), P.is_parametrized(layer, "bias"), type(layer).__name__)

# Procrustes (Kabsch) with the reflection fix
pts = torch.randn(10, 3)
R_true = so3_exp_map(torch.tensor([[0.2, 1.0, -0.4]]))[0]
moved = pts @ R_true.T + torch.tensor([0.5, -1.0, 2.0])
A, B = pts - pts.mean(0), moved - moved.mean(0)
U, S, Vh = torch.linalg.svd(A.T @ B)
d = torch.sign(torch.linalg.det(Vh.T @ U.T))
D = torch.diag(torch.tensor([1.0, 1.0, d.item()]))
R_est = Vh.T @ D @ U.T
print("Kabsch error", (R_est - R_true).abs().max().item() < 1e-10, "singular values", S.tolist())

# chordal L2 rotation averaging
Rs = so3_exp_map(torch.tensor([[0.2, 1.0, -0.4]]) + 0.1 * torch.randn(6, 3))
U, _, Vh = torch.linalg.svd(Rs.mean(0))
R_mean = U @ torch.diag(torch.tensor([1.0, 1.0, torch.linalg.det(U @ Vh).item()])) @ Vh
print("average rotation angle from truth", so3_rotation_angle((R_mean.T @ R_true)[None]).item())

# fitting a rotation to noisy correspondences on the axis-angle vector
w = torch.zeros(1, 3, requires_grad=True)
opt = torch.optim.LBFGS([w], lr=1, max_iter=20, line_search_fn="strong_wolfe")
noisy = moved - moved.mean(0) + 0.01 * torch.randn(10, 3)


def closure():
    opt.zero_grad()
    loss = ((A @ so3_exp_map(w)[0].T - noisy) ** 2).sum()
    loss.backward()
    return loss


opt.step(closure)
print("LBFGS axis-angle", w.detach().tolist(), "loss", closure().item())


def geodesic(wv):
    Rw = so3_exp_map(wv[None])[0]
    return so3_rotation_angle((Rw.T @ R_true)[None])[0] ** 2


w0 = torch.tensor([0.1, 0.9, -0.3])
print("jacrev", jacrev(geodesic)(w0).tolist())
H = hessian(geodesic)(w0)
print("hessian symmetric", torch.allclose(H, H.T), "eigvals", torch.linalg.eigvalsh(H).tolist())
value, jvp_fn = linearize(geodesic, w0)
print("linearize", value.item(), jvp_fn(torch.tensor([1.0, 0.0, 0.0])).item())


def rotation_6d_to_matrix(d6):
    a1, a2 = d6[..., :3], d6[..., 3:]
    b1 = nn.functional.normalize(a1, dim=-1)
    b2 = a2 - (b1 * a2).sum(-1, keepdim=True) * b1
    b2 = nn.functional.normalize(b2, dim=-1)
    b3 = torch.cross(b1, b2, dim=-1)
    return torch.stack((b1, b2, b3), dim=-2)


d6 = R[:, :2, :].reshape(4, 6) + 0.01 * torch.randn(4, 6)
R6 = rotation_6d_to_matrix(d6)
print("6d -> matrix det", [round(x, 10) for x in torch.linalg.det(R6).tolist()],
      "angle to source", so3_rotation_angle(R6.transpose(1, 2) @ R).tolist())
print("pi check", math.isclose(so3_rotation_angle(so3_exp_map(torch.tensor([[0.0, 0.0, 3.0]])))[0].item(), 3.0))
torch.set_default_dtype(torch.float32)
