"""word2vec skip-gram with negative sampling the way the public PyTorch re-implementations
write it: a subsampled corpus, a unigram**0.75 noise distribution sampled with
torch.multinomial, nn.Embedding(sparse=True) for centre and context vectors trained with
optim.SparseAdam, bmm scores through F.logsigmoid; then a mixed model pairing SparseAdam on
sparse embeddings with Adam on its dense layers, an EmbeddingBag(mode="sum", sparse=True)
with offsets and per_sample_weights, and nearest neighbours by cosine similarity."""
import collections

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
rng = np.random.default_rng(0)

vocab_words = [f"w{i}" for i in range(30)]
topics = [vocab_words[i:i + 10] for i in (0, 10, 20)]
corpus = []
for _ in range(120):
    topic = topics[rng.integers(3)]
    corpus += [topic[j] for j in rng.integers(0, 10, size=6)] + ["w0"]
counts = collections.Counter(corpus)
word2idx = {w: i for i, (w, _) in enumerate(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))}
idx2word = {i: w for w, i in word2idx.items()}
freqs = np.array([counts[idx2word[i]] for i in range(len(word2idx))], dtype=np.float64)
freqs = freqs / freqs.sum()
t = 1e-3
p_drop = 1 - np.sqrt(t / freqs)
keep = rng.random(len(corpus)) > p_drop[[word2idx[w] for w in corpus]]
train_words = [word2idx[w] for w, k in zip(corpus, keep) if k]
noise_dist = torch.from_numpy(freqs ** 0.75 / (freqs ** 0.75).sum()).float()
print("corpus", len(corpus), "kept", len(train_words), "vocab", len(word2idx))


def get_target(words, idx, window_size=2):
    R = window_size
    start = idx - R if (idx - R) > 0 else 0
    return words[start:idx] + words[idx + 1:idx + R + 1]


def get_batches(words, batch_size):
    for idx in range(0, len(words) - batch_size + 1, batch_size):
        x, y = [], []
        batch = words[idx:idx + batch_size]
        for ii in range(len(batch)):
            batch_y = get_target(batch, ii)
            y.extend(batch_y)
            x.extend([batch[ii]] * len(batch_y))
        yield x, y


class SkipGramNeg(nn.Module):
    def __init__(self, n_vocab, n_embed, noise_dist):
        super().__init__()
        self.n_vocab, self.n_embed, self.noise_dist = n_vocab, n_embed, noise_dist
        self.in_embed = nn.Embedding(n_vocab, n_embed, sparse=True)
        self.out_embed = nn.Embedding(n_vocab, n_embed, sparse=True)
        self.in_embed.weight.data.uniform_(-1, 1)
        self.out_embed.weight.data.uniform_(-1, 1)

    def forward_noise(self, batch_size, n_samples):
        noise_words = torch.multinomial(self.noise_dist, batch_size * n_samples, replacement=True)
        return self.out_embed(noise_words).view(batch_size, n_samples, self.n_embed)


class NegativeSamplingLoss(nn.Module):
    def forward(self, input_vectors, output_vectors, noise_vectors):
        batch_size, embed_size = input_vectors.shape
        input_vectors = input_vectors.view(batch_size, embed_size, 1)
        output_vectors = output_vectors.view(batch_size, 1, embed_size)
        out_loss = torch.bmm(output_vectors, input_vectors).sigmoid().log().squeeze()
        noise_loss = torch.bmm(noise_vectors.neg(), input_vectors).sigmoid().log()
        noise_loss = noise_loss.squeeze().sum(1)
        return -(out_loss + noise_loss).mean()


model = SkipGramNeg(len(word2idx), 8, noise_dist)
criterion = NegativeSamplingLoss()
optimizer = torch.optim.SparseAdam(model.parameters(), lr=0.01)
for epoch in range(3):
    for inputs, targets in get_batches(train_words, 32):
        inputs, targets = torch.LongTensor(inputs), torch.LongTensor(targets)
        input_vectors = model.in_embed(inputs)
        output_vectors = model.out_embed(targets)
        noise_vectors = model.forward_noise(inputs.shape[0], 5)
        loss = criterion(input_vectors, output_vectors, noise_vectors)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    grad = model.in_embed.weight.grad
    print(f"epoch {epoch} loss {loss.item():.5f} sparse grad {grad.is_sparse} "
          f"nnz rows {grad.coalesce().indices().numel()}")
state = optimizer.state[model.in_embed.weight]
print("sparse adam state", int(state["step"]), f"{state['exp_avg'].abs().sum().item():.5f}")
embeddings = model.in_embed.weight.detach()
valid = torch.tensor([word2idx["w3"], word2idx["w15"]])
sims = F.normalize(embeddings[valid], dim=1) @ F.normalize(embeddings, dim=1).t()
_, closest = sims.topk(4, dim=1)
for v, row in zip(valid.tolist(), closest.tolist()):
    print(idx2word[v], "|", " ".join(idx2word[i] for i in row[1:]))


class BagClassifier(nn.Module):
    def __init__(self, n_vocab, dim, n_class):
        super().__init__()
        self.bag = nn.EmbeddingBag(n_vocab, dim, mode="sum", sparse=True)
        self.fc = nn.Linear(dim, n_class)

    def forward(self, text, offsets, weights):
        return self.fc(self.bag(text, offsets, per_sample_weights=weights))


docs, labels = [], []
for i in range(24):
    topic = i % 3
    docs.append(torch.tensor([word2idx[w] for w in rng.choice(topics[topic], size=4 + i % 3)]))
    labels.append(topic)
text = torch.cat(docs)
offsets = torch.tensor([0] + [len(d) for d in docs[:-1]]).cumsum(0)
weights = torch.rand(len(text))
labels = torch.tensor(labels)
clf = BagClassifier(len(word2idx), 8, 3)
sparse_opt = torch.optim.SparseAdam(list(clf.bag.parameters()), lr=0.05)
dense_opt = torch.optim.Adam(clf.fc.parameters(), lr=0.05)
for step in range(20):
    loss = F.cross_entropy(clf(text, offsets, weights), labels)
    sparse_opt.zero_grad()
    dense_opt.zero_grad()
    loss.backward()
    sparse_opt.step()
    dense_opt.step()
print("bag", f"{loss.item():.5f}", (clf(text, offsets, weights).argmax(1) == labels).sum().item(),
      clf.bag.weight.grad.is_sparse)
try:
    torch.optim.SparseAdam(clf.fc.parameters())
    clf.fc.weight.grad = torch.randn_like(clf.fc.weight)
    bad = torch.optim.SparseAdam([clf.fc.weight])
    bad.step()
except RuntimeError as e:
    print("dense grad refused:", str(e).split(".")[0])
