"""The "common PyTorch mistakes" posts and forum answers, as a script that makes each mistake,
prints the error the way those posts show it (``print(f"{type(e).__name__}: {e}")``), and
applies the fix: a float64 NumPy batch fed to a float32 model (``torch.from_numpy`` then
``.float()``), labels of the wrong dtype, a forgotten ``unsqueeze`` before ``nn.Linear``, an
LSTM's initial state shaped for another batch, a sequence of the wrong rank, ``view`` of a
transposed tensor (``reshape``/``contiguous``), ``torch.where`` over shapes that do not
broadcast, ``permute`` with too few dims, a failed Cholesky of a non-SPD covariance with
jitter added, ``multi_dot`` of mixed dtypes, BCE-with-logits shapes, integer masks,
``gather`` and slice assignments of the wrong shape, an optimizer given a tensor, a plain
tensor assigned as a parameter, an in-place op on a leaf, a second ``backward``
through a freed graph, and ``.numpy()`` of a tensor that requires grad."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)


def attempt(label, fn):
    try:
        out = fn()
    except Exception as e:  # the posts print every failure the same way
        print(f"{label}: {type(e).__name__}: {e}")
        return None
    print(f"{label}: ok {tuple(out.shape) if hasattr(out, 'shape') else out}")
    return out


model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
head = nn.Linear(4, 3, bias=False)
batch = np.random.rand(5, 4)  # NumPy's default float64
x = torch.from_numpy(batch)
attempt("float64 batch", lambda: model(x))
attempt("float64 batch, no bias", lambda: head(x))
attempt("matmul by hand", lambda: x @ model[0].weight.t())
attempt("batched matmul", lambda: x.unsqueeze(0).expand(2, 5, 4) @ model[0].weight.t())
attempt("einsum", lambda: torch.einsum("bi,oi->bo", x, model[0].weight))
logits = attempt("fixed with .float()", lambda: model(x.float()))
print("dtype:", x.dtype, "->", x.float().dtype)

labels = torch.tensor([0.0, 1.0, 2.0, 1.0, 0.0])
attempt("float labels", lambda: F.nll_loss(F.log_softmax(logits, 1), labels))
print(f"fixed loss: {F.cross_entropy(logits, labels.long()).item():.5f}")

single = torch.rand(4)
attempt("single sample", lambda: model(single).shape)
attempt("vector @ float64 matrix", lambda: single @ x.t())
attempt("matrix @ float64 vector", lambda: model[0].weight @ x[0])
attempt("addmm", lambda: torch.addmm(torch.zeros(5, 8, dtype=torch.float64), x.float(), model[0].weight.t()))

lstm = nn.LSTM(4, 6, batch_first=True)
gru = nn.GRU(4, 6, num_layers=2)
seq = torch.rand(3, 7, 4)
h0 = torch.zeros(1, 2, 6)
attempt("lstm state for another batch", lambda: lstm(seq, (h0, torch.zeros(1, 3, 6))))
attempt("lstm cell state", lambda: lstm(seq, (torch.zeros(1, 3, 6), h0)))
attempt("gru layers", lambda: gru(seq.transpose(0, 1), torch.zeros(1, 3, 6)))
attempt("rank-4 input", lambda: lstm(seq.unsqueeze(0)))
out, (h, c) = lstm(seq, (torch.zeros(1, 3, 6), torch.zeros(1, 3, 6)))
print("fixed lstm:", tuple(out.shape), tuple(h.shape), f"{out.mean().item():.5f}")

t = torch.arange(12.).view(3, 4).t()
attempt("view of transpose", lambda: t.view(12))
print("reshape:", t.reshape(12)[:4].tolist(), "contiguous view:", t.contiguous().view(12)[:4].tolist())
mask = torch.tensor([True, False, True])
attempt("where shapes", lambda: torch.where(mask, torch.zeros(4), torch.ones(4)))
print("where fixed:", torch.where(mask[:, None], torch.zeros(3, 4), torch.ones(4)).sum().item())
attempt("permute", lambda: torch.rand(2, 3, 4).permute(2, 0))

cov = torch.tensor([[1.0, 2.0], [2.0, 1.0]])
attempt("cholesky", lambda: torch.linalg.cholesky(cov))
try:
    torch.linalg.cholesky(cov)
except torch.linalg.LinAlgError:
    L = torch.linalg.cholesky(cov @ cov.T + 1e-3 * torch.eye(2))
    print("jittered cholesky:", [round(v, 5) for v in L.flatten().tolist()])
attempt("multi_dot", lambda: torch.linalg.multi_dot([torch.rand(2, 3), torch.rand(3, 3), x[:3, :2]]))

scores = torch.rand(4, 1)
attempt("BCE-with-logits shapes", lambda: nn.BCEWithLogitsLoss()(scores, torch.rand(4)))
attempt("integer mask", lambda: torch.zeros(3).masked_fill(torch.tensor([1, 0, 1]), -1e9))
attempt("gather rank", lambda: logits.gather(1, labels.long()))
print("gather fixed:", tuple(logits.gather(1, labels.long()[:, None]).shape))
buf = torch.zeros(2, 4)
attempt("slice assignment", lambda: buf.__setitem__((slice(None), slice(0, 3)), torch.ones(4)))
attempt("optimizer of a tensor", lambda: torch.optim.Adam(model[0].weight, lr=1e-3))
attempt("tensor as parameter", lambda: setattr(head, "weight", torch.zeros(3, 4)))
head.weight = nn.Parameter(torch.zeros(3, 4))
print("parameter replaced:", [n for n, _ in head.named_parameters()])

w = torch.ones(3, requires_grad=True)
attempt("in-place on leaf", lambda: w.add_(1))
loss = (w * 2).sum()
loss.backward(retain_graph=False)
attempt("second backward", lambda: loss.backward())
attempt(".numpy() of grad tensor", lambda: w.numpy())
print("detached:", w.detach().numpy().tolist(), "grad:", w.grad.tolist())
