"""Classical unsupervised learning written in PyTorch the way tutorial notebooks and small
libraries (tsne-pytorch, kmeans_pytorch, fast_pytorch_kmeans) write it: PCA by
``torch.linalg.svd`` of centred data with sign-fixed components and explained variance,
``torch.pca_lowrank`` and ``torch.svd_lowrank`` against it, whitening, t-SNE (binary search
of Gaussian bandwidths to a perplexity, symmetrised P, early exaggeration, Student-t Q,
gains and momentum as in van der Maaten's reference), k-means++ seeding by
``torch.multinomial`` over ``torch.cdist`` distances, Lloyd iterations with
``index_add_``/``bincount`` centroid updates, a silhouette score, and a Gaussian mixture
refined by EM with ``torch.distributions.MultivariateNormal``."""
import numpy as np
import torch
from torch.distributions import MultivariateNormal

torch.manual_seed(0)
torch.set_printoptions(precision=4, sci_mode=False)
np.random.seed(0)

K = 3
centres = torch.tensor([[4.0, 0, 0, 0, 0, 0], [0, 4.0, 0, 0, 0, 0], [0, 0, 4.0, 0, 0, 0]],
                       dtype=torch.float64)
X = torch.cat([c + torch.randn(30, 6, dtype=torch.float64) * (0.6 + 0.2 * i)
               for i, c in enumerate(centres)])
y = torch.arange(K).repeat_interleave(30)
print("data", tuple(X.shape), X.dtype, X.mean(0))


def pca(X, k):
    mean = X.mean(0, keepdim=True)
    U, S, Vh = torch.linalg.svd(X - mean, full_matrices=False)
    max_abs_cols = torch.argmax(torch.abs(U), dim=0)
    signs = torch.sign(U[max_abs_cols, range(U.shape[1])])
    Vh = Vh * signs[:, None]
    explained = S ** 2 / (X.shape[0] - 1)
    return (X - mean) @ Vh[:k].T, Vh[:k], explained[:k] / explained.sum()


Z, comps, ratio = pca(X, 2)
print("explained variance ratio", ratio)
print("components", comps)
U, S, V = torch.pca_lowrank(X, q=4, center=True, niter=4)
print("pca_lowrank singular values", S, "vs svd",
      torch.linalg.svdvals(X - X.mean(0)).narrow(0, 0, 4))
print("subspace agreement", torch.linalg.svdvals(V[:, :2].T @ comps.T))
U2, S2, V2 = torch.svd_lowrank(X, q=3, niter=3)
print("svd_lowrank reconstruction error", (U2 @ torch.diag(S2) @ V2.T - X).norm() / X.norm())
W = comps.T / (ratio.sqrt() * 0 + torch.sqrt(torch.linalg.svdvals(X - X.mean(0))[:2] ** 2 /
                                             (X.shape[0] - 1)))
white = (X - X.mean(0)) @ W
print("whitened covariance", torch.cov(white.T))


def Hbeta(D, beta=1.0):
    P = torch.exp(-D * beta)
    sumP = torch.sum(P)
    H = torch.log(sumP) + beta * torch.sum(D * P) / sumP
    return H, P / sumP


def x2p(X, tol=1e-5, perplexity=10.0):
    n = X.shape[0]
    sum_X = torch.sum(X * X, 1)
    D = torch.add(torch.add(-2 * X @ X.T, sum_X).T, sum_X)
    P = torch.zeros(n, n, dtype=X.dtype)
    beta = torch.ones(n, 1, dtype=X.dtype)
    logU = torch.log(torch.tensor([perplexity], dtype=X.dtype))
    n_list = list(range(n))
    for i in range(n):
        betamin, betamax = None, None
        Di = D[i, n_list[0:i] + n_list[i + 1:n]]
        H, thisP = Hbeta(Di, beta[i])
        Hdiff = H - logU
        tries = 0
        while torch.abs(Hdiff) > tol and tries < 50:
            if Hdiff > 0:
                betamin = beta[i].clone()
                beta[i] = beta[i] * 2 if betamax is None else (beta[i] + betamax) / 2
            else:
                betamax = beta[i].clone()
                beta[i] = beta[i] / 2 if betamin is None else (beta[i] + betamin) / 2
            H, thisP = Hbeta(Di, beta[i])
            Hdiff = H - logU
            tries += 1
        P[i, n_list[0:i] + n_list[i + 1:n]] = thisP
    return P, beta


def tsne(X, no_dims=2, perplexity=10.0, max_iter=60):
    n = X.shape[0]
    initial_momentum, final_momentum, eta, min_gain = 0.5, 0.8, 50, 0.01
    Y = torch.randn(n, no_dims, dtype=X.dtype, generator=torch.Generator().manual_seed(1)) * 1e-2
    iY = torch.zeros(n, no_dims, dtype=X.dtype)
    gains = torch.ones(n, no_dims, dtype=X.dtype)
    P, beta = x2p(X, 1e-5, perplexity)
    print("sigma range", torch.sqrt(1 / beta).min().item(), torch.sqrt(1 / beta).max().item())
    P = P + P.T
    P = P / torch.sum(P)
    P = P * 4.0
    P = torch.max(P, torch.tensor(1e-21, dtype=X.dtype))
    for it in range(max_iter):
        sum_Y = torch.sum(Y * Y, 1)
        num = -2.0 * Y @ Y.T
        num = 1.0 / (1.0 + torch.add(torch.add(num, sum_Y).T, sum_Y))
        num[range(n), range(n)] = 0.0
        Q = num / torch.sum(num)
        Q = torch.max(Q, torch.tensor(1e-12, dtype=X.dtype))
        PQ = P - Q
        dY = torch.sum((PQ * num).unsqueeze(2) * (Y.unsqueeze(1) - Y.unsqueeze(0)), 1) * 4
        momentum = initial_momentum if it < 20 else final_momentum
        gains = (gains + 0.2) * ((dY > 0.0) != (iY > 0.0)).double() + \
            (gains * 0.8) * ((dY > 0.0) == (iY > 0.0)).double()
        gains[gains < min_gain] = min_gain
        iY = momentum * iY - eta * (gains * dY)
        Y = Y + iY
        Y = Y - torch.mean(Y, 0)
        if (it + 1) % 20 == 0:
            C = torch.sum(P * torch.log(P / Q))
            print(f"Iteration {it + 1}: error is {C.item():.5f}")
        if it == 30:
            P = P / 4.0
    return Y


Y = tsne(Z, perplexity=10.0)
cent = torch.stack([Y[y == c].mean(0) for c in range(K)])
print("t-SNE within/between", (Y - cent[y]).norm(dim=1).mean().item() /
      torch.pdist(cent).mean().item())


def kmeans_pp(X, k, g):
    idx = torch.randint(0, X.shape[0], (1,), generator=g)
    C = X[idx]
    while C.shape[0] < k:
        d2 = torch.cdist(X, C).min(1).values ** 2
        nxt = torch.multinomial(d2 / d2.sum(), 1, generator=g)
        C = torch.cat([C, X[nxt]])
    return C


def kmeans(X, k, iters=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    C = kmeans_pp(X, k, g)
    for it in range(iters):
        assign = torch.cdist(X, C).argmin(1)
        sums = torch.zeros_like(C).index_add_(0, assign, X)
        counts = torch.bincount(assign, minlength=k).clamp(min=1).unsqueeze(1)
        newC = sums / counts
        shift = (newC - C).norm().item()
        C = newC
        if shift < 1e-9:
            break
    inertia = ((X - C[assign]) ** 2).sum().item()
    return C, assign, inertia, it


def silhouette(X, labels):
    D = torch.cdist(X, X)
    s = []
    for i in range(X.shape[0]):
        same = labels == labels[i]
        a = D[i, same].sum() / (same.sum() - 1)
        b = min(D[i, labels == c].mean() for c in labels.unique() if c != labels[i])
        s.append((b - a) / torch.max(a, b))
    return torch.stack(s).mean().item()


C, assign, inertia, its = kmeans(X, K)
order = C.argmax(1)
print("kmeans inertia", round(inertia, 6), "iters", its, "centres by axis", order.tolist())
print("purity", max((assign == y).float().mean().item(),
                    (order[assign] == y).float().mean().item()))
print("silhouette", silhouette(X, assign))
print("silhouette (t-SNE)", silhouette(Y, assign))

# EM for a Gaussian mixture from the k-means start
means = C.clone()
covs = torch.stack([torch.cov((X[assign == j]).T) + 1e-3 * torch.eye(6, dtype=X.dtype)
                    for j in range(K)])
weights = torch.bincount(assign, minlength=K).double() / X.shape[0]
for it in range(5):
    logp = torch.stack([MultivariateNormal(means[j], covs[j]).log_prob(X) for j in range(K)], 1)
    logp = logp + weights.log()
    ll = torch.logsumexp(logp, 1)
    resp = (logp - ll[:, None]).exp()
    Nk = resp.sum(0)
    weights = Nk / X.shape[0]
    means = (resp.T @ X) / Nk[:, None]
    covs = torch.stack([((resp[:, j, None] * (X - means[j])).T @ (X - means[j])) / Nk[j]
                        + 1e-6 * torch.eye(6, dtype=X.dtype) for j in range(K)])
    print(f"EM {it} mean log-likelihood {ll.mean().item():.6f} weights {weights.tolist()}")
