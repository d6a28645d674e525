"""State-space filtering the way pykalman-style and "Kalman filter in PyTorch" notebooks
write it, in float64: a constant-velocity model simulated with ``MultivariateNormal``, the
Kalman filter with the Joseph-form covariance update and ``torch.linalg.solve`` gains, the
log-likelihood from the innovations, the Rauch-Tung-Striebel smoother, learning the noise
scales by gradient ascent through the whole filter (log-parametrised, ``Adam``), a batched
filter over several series with ``torch.vmap``-free broadcasting, and an unscented
transform's sigma points through ``torch.linalg.cholesky``."""
import math

import torch
from torch.distributions import MultivariateNormal

torch.set_default_dtype(torch.float64)
torch.manual_seed(0)

dt = 0.5
F_ = torch.tensor([[1.0, dt], [0.0, 1.0]])
H = torch.tensor([[1.0, 0.0]])
true_q, true_r = 0.05, 0.4


def Q_of(q):
    return q * torch.tensor([[dt ** 3 / 3, dt ** 2 / 2], [dt ** 2 / 2, dt]])


def simulate(T, q, r, gen):
    x = torch.tensor([0.0, 1.0])
    xs, ys = [], []
    proc = MultivariateNormal(torch.zeros(2), covariance_matrix=Q_of(q))
    for _ in range(T):
        x = F_ @ x + proc.sample()
        y = H @ x + math.sqrt(r) * torch.randn(1, generator=gen)
        xs.append(x)
        ys.append(y)
    return torch.stack(xs), torch.stack(ys)


def kalman_filter(ys, q, r, m0, P0):
    Q, R = Q_of(q), r * torch.eye(1)
    m, P = m0, P0
    ms, Ps, mps, Pps, ll = [], [], [], [], 0.0
    I = torch.eye(2)
    for y in ys:
        mp = F_ @ m
        Pp = F_ @ P @ F_.T + Q
        S = H @ Pp @ H.T + R
        K = torch.linalg.solve(S, H @ Pp).T
        v = y - H @ mp
        ll = ll + MultivariateNormal(torch.zeros(1), covariance_matrix=S).log_prob(v)
        m = mp + K @ v
        A = I - K @ H
        P = A @ Pp @ A.T + K @ R @ K.T
        ms.append(m), Ps.append(P), mps.append(mp), Pps.append(Pp)
    return torch.stack(ms), torch.stack(Ps), torch.stack(mps), torch.stack(Pps), ll


def rts_smoother(ms, Ps, mps, Pps):
    T = ms.shape[0]
    msm, Psm = [ms[-1]], [Ps[-1]]
    for t in range(T - 2, -1, -1):
        G = Ps[t] @ F_.T @ torch.linalg.inv(Pps[t + 1])
        msm.insert(0, ms[t] + G @ (msm[0] - mps[t + 1]))
        Psm.insert(0, Ps[t] + G @ (Psm[0] - Pps[t + 1]) @ G.T)
    return torch.stack(msm), torch.stack(Psm)


gen = torch.Generator().manual_seed(1)
xs, ys = simulate(40, true_q, true_r, gen)
m0, P0 = torch.zeros(2), torch.eye(2)
ms, Ps, mps, Pps, ll = kalman_filter(ys, torch.tensor(true_q), torch.tensor(true_r), m0, P0)
msm, Psm = rts_smoother(ms, Ps, mps, Pps)
print(f"log-likelihood at truth {ll.item():.6f}")
print(f"filter rmse {(ms[:, 0] - xs[:, 0]).pow(2).mean().sqrt().item():.6f} "
      f"smoother rmse {(msm[:, 0] - xs[:, 0]).pow(2).mean().sqrt().item():.6f}")
print("final filtered cov", Ps[-1])
print("smoothed variance <= filtered", bool((Psm[:, 0, 0] <= Ps[:, 0, 0] + 1e-12).all()))
print("symmetric", torch.allclose(Ps, Ps.transpose(1, 2)), torch.linalg.eigvalsh(Psm[5]))

log_q = torch.tensor(math.log(0.5), requires_grad=True)
log_r = torch.tensor(math.log(2.0), requires_grad=True)
opt = torch.optim.Adam([log_q, log_r], lr=0.1)
for it in range(30):
    opt.zero_grad()
    *_, ll = kalman_filter(ys, log_q.exp(), log_r.exp(), m0, P0)
    (-ll).backward()
    opt.step()
    if it % 10 == 9:
        print(f"iter {it} nll {-ll.item():.6f} q {log_q.exp().item():.6f} r {log_r.exp().item():.6f} "
              f"grad {log_q.grad.item():.6f} {log_r.grad.item():.6f}")

# batched: three series at once, filtering by broadcasting over a leading dimension
Y = torch.stack([simulate(20, true_q, true_r, gen)[1] for _ in range(3)])
m = torch.zeros(3, 2)
P = torch.eye(2).expand(3, 2, 2).clone()
Q, R = Q_of(true_q), true_r * torch.eye(1)
for t in range(Y.shape[1]):
    mp = m @ F_.T
    Pp = F_ @ P @ F_.T + Q
    S = H @ Pp @ H.T + R
    K = torch.linalg.solve(S, H @ Pp).transpose(1, 2)
    m = mp + (K @ (Y[:, t, :, None] - H @ mp[..., None])).squeeze(-1)
    P = Pp - K @ S @ K.transpose(1, 2)
one = kalman_filter(Y[1], torch.tensor(true_q), torch.tensor(true_r), m0, P0)[0][-1]
print("batched final means", m, "matches single", torch.allclose(m[1], one))

# unscented transform of a polar-to-cartesian map
mean = torch.tensor([1.0, 0.3])
cov = torch.tensor([[0.04, 0.01], [0.01, 0.09]])
n, alpha, beta, kappa = 2, 1e-1, 2.0, 0.0
lam = alpha ** 2 * (n + kappa) - n
L = torch.linalg.cholesky((n + lam) * cov)
sigma = torch.cat([mean[None], mean + L.T, mean - L.T])
wm = torch.full((2 * n + 1,), 1 / (2 * (n + lam)))
wc = wm.clone()
wm[0] = lam / (n + lam)
wc[0] = lam / (n + lam) + (1 - alpha ** 2 + beta)
f = torch.stack([sigma[:, 0] * torch.cos(sigma[:, 1]), sigma[:, 0] * torch.sin(sigma[:, 1])], 1)
ut_mean = wm @ f
d = f - ut_mean
print("UT mean", ut_mean, "UT cov", (wc[:, None] * d).T @ d)
