"""GloVe word vectors the way the PyTorch re-implementations (noaRricky/pytorch-glove,
the "GloVe from scratch" notebooks) write them: a ``Counter`` vocabulary with ``min_count``,
a distance-weighted co-occurrence table gathered in a ``defaultdict`` and turned into
COO tensors (``torch.sparse_coo_tensor(...).coalesce()``), the weighting
``(x / x_max) ** alpha`` clipped at 1, focal and context embeddings plus biases,
``Adagrad`` over shuffled index batches from a ``TensorDataset``, the summed vectors as the
embedding, and nearest neighbours and analogies by cosine similarity with
``F.cosine_similarity`` and ``topk``; the vectors saved with ``torch.save`` beside the
vocabulary."""
from collections import Counter, defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(1)

corpus = """the king rules the kingdom with the queen . the queen rules the kingdom with the king .
a man walks to the market . a woman walks to the market . the man is a king . the woman is a queen .
the prince is the son of the king . the princess is the daughter of the queen .
a boy is a young man . a girl is a young woman . the boy and the girl play in the garden .
the king and the man eat bread . the queen and the woman eat bread . dogs and cats play in the garden .""".split()
MIN_COUNT, WINDOW, EMBED, X_MAX, ALPHA = 2, 3, 12, 10.0, 0.75

counts = Counter(corpus)
vocab = [w for w, c in counts.most_common() if c >= MIN_COUNT]
w2i = {w: i for i, w in enumerate(vocab)}
print(f"{len(corpus)} tokens, vocabulary {len(vocab)}; most common {counts.most_common(4)}")

cooc = defaultdict(float)
ids = [w2i.get(w, -1) for w in corpus]
for center, wi in enumerate(ids):
    if wi < 0:
        continue
    for off in range(1, WINDOW + 1):
        if center + off >= len(ids):
            break
        wj = ids[center + off]
        if wj < 0:
            continue
        cooc[(wi, wj)] += 1.0 / off
        cooc[(wj, wi)] += 1.0 / off
keys = sorted(cooc)
indices = torch.tensor(keys, dtype=torch.long).t()
values = torch.tensor([cooc[k] for k in keys])
X = torch.sparse_coo_tensor(indices, values, (len(vocab), len(vocab))).coalesce()
print("co-occurrence nnz", X._nnz(), "total", round(X.values().sum().item(), 4),
      "symmetric", torch.equal(X.to_dense(), X.to_dense().t()))
print("row 'the'", round(X.to_dense()[w2i["the"]].sum().item(), 4))


class GloVe(nn.Module):
    def __init__(self, vocab_size, dim):
        super().__init__()
        self.wi = nn.Embedding(vocab_size, dim)
        self.wj = nn.Embedding(vocab_size, dim)
        self.bi = nn.Embedding(vocab_size, 1)
        self.bj = nn.Embedding(vocab_size, 1)
        for emb in (self.wi, self.wj):
            emb.weight.data.uniform_(-0.5 / dim, 0.5 / dim)
        self.bi.weight.data.zero_()
        self.bj.weight.data.zero_()

    def forward(self, i, j):
        return (self.wi(i) * self.wj(j)).sum(1) + self.bi(i).squeeze(1) + self.bj(j).squeeze(1)

    def embeddings(self):
        return self.wi.weight.detach() + self.wj.weight.detach()


def weight_fn(x):
    return torch.clamp((x / X_MAX) ** ALPHA, max=1.0)


model = GloVe(len(vocab), EMBED)
optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
rows, cols = X.indices()
data = TensorDataset(rows, cols, X.values())
loader = DataLoader(data, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(2))
for epoch in range(12):
    total = 0.0
    for i, j, x in loader:
        pred = model(i, j)
        loss = (weight_fn(x) * (pred - torch.log(x)) ** 2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    if epoch % 3 == 2:
        print(f"epoch {epoch + 1} loss {total / len(data):.5f}")

E = F.normalize(model.embeddings(), dim=1)


def neighbours(word, k=3):
    sims = F.cosine_similarity(E[w2i[word]][None], E, dim=1)
    sims[w2i[word]] = -1.0
    vals, idx = sims.topk(k)
    return [(vocab[i], round(v, 3)) for v, i in zip(vals.tolist(), idx.tolist())]


for w in ("king", "woman", "garden"):
    print(w, "->", neighbours(w))
target = E[w2i["king"]] - E[w2i["man"]] + E[w2i["woman"]]
scores = E @ F.normalize(target, dim=0)
for w in ("king", "man", "woman"):
    scores[w2i[w]] = -1.0
print("king - man + woman:", [(vocab[i], round(s, 3)) for s, i in zip(*[t.tolist() for t in scores.topk(3)])])
torch.save({"vectors": model.embeddings(), "vocab": vocab}, "glove.pt")
saved = torch.load("glove.pt")
print("saved", tuple(saved["vectors"].shape), saved["vocab"][:5], "bias range",
      round(model.bi.weight.min().item(), 4), round(model.bi.weight.max().item(), 4))
