"""Differentiable sorting and learning to rank the way ermongroup/neuralsort, the
"fast differentiable sorting" PyTorch ports and allRank write them: NeuralSort's relaxed
permutation matrix ``P_hat`` from ``|s_i - s_j|`` row sums and a ``softmax`` over
``(n + 1 - 2i) s - B 1``, its straight-through hard version by ``scatter_`` of the
``argmax``, soft ranks by a pairwise-sigmoid sum, a Spearman-correlation loss, ListNet and
ApproxNDCG losses over padded query lists with ``masked_fill``, NDCG@k by ``sort``/
``gather``/``log2`` discounts, and a score MLP trained with ``AdamW`` and a
``CosineAnnealingWarmRestarts`` schedule stepped with fractional epochs."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)
PADDED = -1.0


def neural_sort(s, tau=1.0, hard=False):
    """s: (B, n, 1) scores -> (B, n, n) relaxed permutation, rows in descending order."""
    n = s.size(1)
    one = torch.ones((n, 1), dtype=s.dtype)
    A_s = torch.abs(s - s.permute(0, 2, 1))
    B = torch.matmul(A_s, torch.matmul(one, one.t()))
    scaling = (n + 1 - 2 * (torch.arange(n, dtype=s.dtype) + 1))
    C = torch.matmul(s, scaling.unsqueeze(0))
    P_max = (C - B).permute(0, 2, 1)
    P_hat = F.softmax(P_max / tau, dim=-1)
    if hard:
        P = torch.zeros_like(P_hat)
        P.scatter_(-1, P_hat.topk(1, -1)[1], value=1)
        P_hat = (P - P_hat).detach() + P_hat
    return P_hat


def soft_rank(s, temperature=0.1):
    """1-based soft ranks (descending) by summing pairwise sigmoids."""
    diff = s.unsqueeze(-1) - s.unsqueeze(-2)
    return 0.5 + torch.sigmoid(-diff / temperature).sum(-1)


def spearman_loss(pred, target, temperature=0.1):
    rp, rt = soft_rank(pred, temperature), soft_rank(target, 1e-3)
    rp = rp - rp.mean(-1, keepdim=True)
    rt = rt - rt.mean(-1, keepdim=True)
    return 1 - (rp * rt).sum(-1) / (rp.norm(dim=-1) * rt.norm(dim=-1))


def listnet_loss(y_pred, y_true, eps=1e-10):
    mask = y_true == PADDED
    y_pred = y_pred.clone().masked_fill(mask, float("-inf"))
    y_true = y_true.clone().masked_fill(mask, float("-inf"))
    preds_smax = F.softmax(y_pred, dim=1)
    true_smax = F.softmax(y_true, dim=1)
    preds_log = torch.log(preds_smax + eps)
    return torch.mean(-torch.sum(true_smax * preds_log, dim=1))


def dcg(y_pred, y_true, k):
    _, order = y_pred.masked_fill(y_true == PADDED, float("-inf")).sort(descending=True, dim=-1)
    true_sorted = torch.gather(y_true, 1, order).clamp(min=0)
    discounts = 1.0 / torch.log2(torch.arange(y_true.shape[1], dtype=torch.float) + 2.0)
    gains = (torch.pow(2, true_sorted) - 1) * discounts
    return gains[:, :k].sum(1)


def ndcg(y_pred, y_true, k=5):
    ideal = dcg(y_true, y_true, k)
    return torch.where(ideal > 0, dcg(y_pred, y_true, k) / ideal.clamp(min=1e-10), torch.zeros_like(ideal))


def approx_ndcg_loss(y_pred, y_true, alpha=10.0):
    mask = y_true == PADDED
    y_pred = y_pred.masked_fill(mask, -1e4)
    y_true = y_true.masked_fill(mask, 0.0)
    approx_pos = 1.0 + torch.sum(torch.sigmoid(-alpha * (y_pred[:, :, None] - y_pred[:, None, :]))
                                 * (~mask)[:, None, :].float(), dim=-1) - 0.5 * 1.0
    approx_d = (torch.pow(2, y_true) - 1) / torch.log2(1.0 + approx_pos)
    ideal = dcg(y_true, y_true, y_true.shape[1]).clamp(min=1e-10)
    return -(approx_d.sum(-1) / ideal).mean()


s = torch.tensor([[[3.0], [-1.0], [2.0], [0.5]]])
P = neural_sort(s, tau=0.1)
print("P_hat rows argmax", P.argmax(-1).tolist(), "row sums", P.sum(-1).squeeze().tolist())
print("sorted by P_hat", (P @ s).squeeze().tolist())
Ph = neural_sort(s.requires_grad_(), tau=1.0, hard=True)
(Ph @ torch.arange(4.0).view(1, 4, 1)).sum().backward()
print("hard P", Ph[0].detach().tolist(), "straight-through grad", s.grad.view(-1).tolist())
print("soft ranks", soft_rank(torch.tensor([0.1, 2.0, -1.0, 0.5])).tolist())

# synthetic queries: 10 documents each, features whose hidden weights make the relevance
n_q, n_docs, n_feat = 32, 10, 6
w_true = torch.randn(n_feat)
X = torch.randn(n_q, n_docs, n_feat)
rel = torch.bucketize(X @ w_true, torch.tensor([-1.0, 0.0, 1.0])).float()
lengths = torch.randint(5, n_docs + 1, (n_q,))
pad = torch.arange(n_docs)[None] >= lengths[:, None]
rel = rel.masked_fill(pad, PADDED)
print("relevance histogram", torch.bincount(rel[rel >= 0].long(), minlength=4).tolist(), "padded", int(pad.sum()))

for loss_name in ("listnet", "approx_ndcg", "spearman", "neuralsort"):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(n_feat, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=1e-4)
    iters = 4
    for epoch in range(4):
        for it in range(iters):
            q = slice(it * 8, it * 8 + 8)
            scores = net(X[q]).squeeze(-1)
            if loss_name == "listnet":
                loss = listnet_loss(scores, rel[q])
            elif loss_name == "approx_ndcg":
                loss = approx_ndcg_loss(scores, rel[q])
            elif loss_name == "spearman":
                loss = spearman_loss(scores.masked_fill(pad[q], -10.0), rel[q].masked_fill(pad[q], -10.0)).mean()
            else:
                P_hat = neural_sort(scores.masked_fill(pad[q], -10.0).unsqueeze(-1), tau=0.5)
                target = neural_sort(rel[q].masked_fill(pad[q], -10.0).unsqueeze(-1), tau=1e-2).detach()
                loss = -(target * torch.log(P_hat + 1e-12)).sum(-1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step(epoch + it / iters)
        with torch.no_grad():
            score_all = net(X).squeeze(-1)
            metric = ndcg(score_all, rel, k=5).mean().item()
    print(f"{loss_name:12s} loss {loss.item():.5f} NDCG@5 {metric:.4f} lr {sched.get_last_lr()[0]:.6f}")
