"""A word-level language model the way the Transformer-XL / fairseq adaptive-input code and
the PyTorch ``word_language_model`` example's issues write it: a Zipf-distributed synthetic
corpus, a ``Dictionary``/``Corpus`` pair, ``batchify`` and ``get_batch`` over BPTT windows,
an LSTM with ``proj_size`` (LSTMP) and the hidden state ``repackage_hidden``-ed between
windows, ``nn.AdaptiveLogSoftmaxWithLoss`` (cutoffs, ``div_value``, ``head_bias``) for the
loss, ``log_prob`` for full distributions and ``predict`` for argmaxes, perplexity by
``math.exp``, variable-length sentences through ``pack_sequence(enforce_sorted=False)``,
``unpack_sequence``/``unpad_sequence``, and a checkpoint written and read back as a whole
``torch.save`` of the model and its optimizer."""
import math
from collections import Counter

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence, unpack_sequence, unpad_sequence

torch.manual_seed(1111)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus(object):
    def __init__(self, lines):
        self.dictionary = Dictionary()
        counts = Counter(w for line in lines for w in line.split())
        for w, _ in counts.most_common():  # frequency order, as adaptive softmax wants
            self.dictionary.add_word(w)
        self.dictionary.add_word("<eos>")
        ids = [self.dictionary.word2idx[w] for line in lines for w in line.split() + ["<eos>"]]
        self.train = torch.tensor(ids[: int(len(ids) * 0.8)], dtype=torch.int64)
        self.valid = torch.tensor(ids[int(len(ids) * 0.8):], dtype=torch.int64)


g = torch.Generator().manual_seed(0)
vocab_words = [f"w{i}" for i in range(60)]
zipf = 1.0 / torch.arange(1, 61).float()
lines = []
for _ in range(120):
    n = int(torch.randint(3, 9, (1,), generator=g))
    idx = torch.multinomial(zipf, n, replacement=True, generator=g)
    lines.append(" ".join(vocab_words[i] for i in idx.tolist()))
corpus = Corpus(lines)
ntokens = len(corpus.dictionary)
print("vocab", ntokens, "train tokens", len(corpus.train), "valid tokens", len(corpus.valid))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


bptt = 8
train_data, val_data = batchify(corpus.train, 6), batchify(corpus.valid, 3)


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nproj, cutoffs, dropout=0.2):
        super(RNNModel, self).__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, 1, proj_size=nproj)
        self.crit = nn.AdaptiveLogSoftmaxWithLoss(nproj, ntoken, cutoffs=cutoffs,
                                                  div_value=2.0, head_bias=True)
        self.nhid, self.nproj = nhid, nproj
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)

    def forward(self, input, hidden, target=None):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output).view(-1, self.nproj)
        if target is None:
            return output, hidden
        return self.crit(output, target), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(1, bsz, self.nproj), weight.new_zeros(1, bsz, self.nhid))


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


model = RNNModel(ntokens, 16, 24, 12, cutoffs=[8, 24]).to(device)
print(model)
print(model.crit.head, model.crit.tail[1])
optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)


def evaluate(data_source, bsz):
    model.eval()
    total_loss = 0.
    hidden = model.init_hidden(bsz)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i)
            out, hidden = model(data, hidden, targets)
            total_loss += len(data) * out.loss.item()
            hidden = repackage_hidden(hidden)
    return total_loss / (len(data_source) - 1)


for epoch in range(1, 3):
    model.train()
    hidden = model.init_hidden(6)
    total = 0.0
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        out, hidden = model(data, hidden, targets)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        total += out.loss.item()
    val_loss = evaluate(val_data, 3)
    print("| epoch {:3d} | train loss {:5.3f} | valid loss {:5.3f} | valid ppl {:8.3f}".format(
        epoch, total / (batch + 1), val_loss, math.exp(val_loss)))

model.eval()
with torch.no_grad():
    data, targets = get_batch(val_data, 0)
    feats, _ = model(data, model.init_hidden(3))
    logp = model.crit.log_prob(feats)
    out = model.crit(feats, targets)
    print("log_prob rows sum to one", torch.allclose(logp.exp().sum(1), torch.ones(len(feats))))
    print("output matches log_prob", torch.allclose(out.output, logp.gather(1, targets[:, None]).squeeze(1), atol=1e-6))
    pred = model.crit.predict(feats)
    print("predict == argmax", torch.equal(pred, logp.argmax(1)), pred[:8].tolist())
    print("loss", out.loss.item(), "head size", model.crit.head_size, model.crit.n_clusters)

sentences = [torch.tensor([corpus.dictionary.word2idx[w] for w in line.split()])
             for line in lines[:4]]
packed = pack_sequence([model.encoder(s) for s in sentences], enforce_sorted=False)
print("packed batch sizes", packed.batch_sizes.tolist(), packed.sorted_indices.tolist())
with torch.no_grad():
    out_packed, (h, c) = model.rnn(packed)
padded, lens = pad_packed_sequence(out_packed, batch_first=True)
print("padded", tuple(padded.shape), lens.tolist(), tuple(h.shape), tuple(c.shape))
seqs = unpack_sequence(out_packed)
print([tuple(s.shape) for s in seqs], torch.allclose(seqs[2][-1], h[0, 2]))
print([tuple(t.shape) for t in unpad_sequence(padded, lens, batch_first=True)])

with open("model.pt", "wb") as f:
    torch.save({"model": model, "optimizer": optimizer.state_dict()}, f)
with open("model.pt", "rb") as f:
    ck = torch.load(f, weights_only=False)
loaded = ck["model"]
print(type(loaded).__name__, sorted(ck["optimizer"]["state"][0].keys()),
      round(evaluate(val_data, 3), 5) == round(val_loss, 5))
