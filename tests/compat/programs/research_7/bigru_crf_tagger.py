"""A sequence tagger the way NER repositories write it on top of pytorch-crf's ``CRF``
module: word and character embeddings (a char-CNN with ``max`` over characters), a
bidirectional GRU over ``pack_padded_sequence``/``pad_packed_sequence`` with
``enforce_sorted=False``, a linear-chain CRF (forward algorithm with ``logsumexp``,
gold-path score with ``gather``, Viterbi decoding with back-pointers), a BIO span F1, and
the PyTorch tutorial's single-sentence ``_viterbi_decode`` for comparison."""
import argparse
import random
from collections import Counter

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=6)
parser.add_argument("--batch_size", type=int, default=8)
parser.add_argument("--hidden_dim", type=int, default=16)
parser.add_argument("--seed", type=int, default=1234)
args = parser.parse_args()

random.seed(args.seed)
np.random.seed(args.seed)
torch.manual_seed(args.seed)

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
PERSONS = ["john", "mary", "smith", "anna", "lee"]
PLACES = ["paris", "new", "york", "berlin", "rome"]
FILLER = ["the", "went", "to", "in", "met", "and", "visited", "with", "a", "city"]


def make_sentence():
    words, tags = [], []
    for _ in range(random.randint(3, 9)):
        r = random.random()
        if r < 0.2:
            n = random.randint(1, 2)
            words += random.sample(PERSONS, n)
            tags += ["B-PER"] + ["I-PER"] * (n - 1)
        elif r < 0.35:
            n = random.randint(1, 2)
            words += random.sample(PLACES, n)
            tags += ["B-LOC"] + ["I-LOC"] * (n - 1)
        else:
            words.append(random.choice(FILLER))
            tags.append("O")
    return words, tags


data = [make_sentence() for _ in range(48)]
word_counts = Counter(w for ws, _ in data for w in ws)
word2idx = {"<pad>": 0, "<unk>": 1}
for w, _ in word_counts.most_common():
    word2idx[w] = len(word2idx)
char2idx = {"<pad>": 0}
for w in word2idx:
    for c in w:
        char2idx.setdefault(c, len(char2idx))
tag2idx = {t: i for i, t in enumerate(TAGS)}


class CRF(nn.Module):
    def __init__(self, num_tags, batch_first=False):
        super().__init__()
        self.num_tags, self.batch_first = num_tags, batch_first
        self.start_transitions = nn.Parameter(torch.empty(num_tags))
        self.end_transitions = nn.Parameter(torch.empty(num_tags))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags))
        nn.init.uniform_(self.start_transitions, -0.1, 0.1)
        nn.init.uniform_(self.end_transitions, -0.1, 0.1)
        nn.init.uniform_(self.transitions, -0.1, 0.1)

    def __repr__(self):
        return f"{self.__class__.__name__}(num_tags={self.num_tags})"

    def forward(self, emissions, tags, mask=None, reduction="sum"):
        if reduction not in ("none", "sum", "mean", "token_mean"):
            raise ValueError(f"invalid reduction: {reduction}")
        if mask is None:
            mask = torch.ones_like(tags, dtype=torch.uint8)
        if mask.dtype != torch.uint8:
            mask = mask.byte()
        if self.batch_first:
            emissions, tags, mask = emissions.transpose(0, 1), tags.transpose(0, 1), mask.transpose(0, 1)
        numerator = self._compute_score(emissions, tags, mask)
        denominator = self._compute_normalizer(emissions, mask)
        llh = numerator - denominator
        if reduction == "none":
            return llh
        if reduction == "sum":
            return llh.sum()
        if reduction == "mean":
            return llh.mean()
        return llh.sum() / mask.float().sum()

    def decode(self, emissions, mask=None):
        if mask is None:
            mask = emissions.new_ones(emissions.shape[:2], dtype=torch.uint8)
        if mask.dtype != torch.uint8:
            mask = mask.byte()
        if self.batch_first:
            emissions, mask = emissions.transpose(0, 1), mask.transpose(0, 1)
        return self._viterbi_decode(emissions, mask)

    def _compute_score(self, emissions, tags, mask):
        seq_length, batch_size = tags.shape
        mask = mask.float()
        score = self.start_transitions[tags[0]]
        score += emissions[0, torch.arange(batch_size), tags[0]]
        for i in range(1, seq_length):
            score += self.transitions[tags[i - 1], tags[i]] * mask[i]
            score += emissions[i, torch.arange(batch_size), tags[i]] * mask[i]
        seq_ends = mask.long().sum(dim=0) - 1
        last_tags = tags[seq_ends, torch.arange(batch_size)]
        score += self.end_transitions[last_tags]
        return score

    def _compute_normalizer(self, emissions, mask):
        seq_length = emissions.size(0)
        score = self.start_transitions + emissions[0]
        for i in range(1, seq_length):
            broadcast_score = score.unsqueeze(2)
            broadcast_emissions = emissions[i].unsqueeze(1)
            next_score = broadcast_score + self.transitions + broadcast_emissions
            next_score = torch.logsumexp(next_score, dim=1)
            score = torch.where(mask[i].unsqueeze(1).bool(), next_score, score)
        score += self.end_transitions
        return torch.logsumexp(score, dim=1)

    def _viterbi_decode(self, emissions, mask):
        seq_length, batch_size = mask.shape
        score = self.start_transitions + emissions[0]
        history = []
        for i in range(1, seq_length):
            broadcast_score = score.unsqueeze(2)
            broadcast_emission = emissions[i].unsqueeze(1)
            next_score = broadcast_score + self.transitions + broadcast_emission
            next_score, indices = next_score.max(dim=1)
            score = torch.where(mask[i].unsqueeze(1).bool(), next_score, score)
            history.append(indices)
        score += self.end_transitions
        seq_ends = mask.long().sum(dim=0) - 1
        best_tags_list = []
        for idx in range(batch_size):
            _, best_last_tag = score[idx].max(dim=0)
            best_tags = [best_last_tag.item()]
            for hist in reversed(history[:seq_ends[idx]]):
                best_last_tag = hist[idx][best_tags[-1]]
                best_tags.append(best_last_tag.item())
            best_tags.reverse()
            best_tags_list.append(best_tags)
        return best_tags_list


class CharCNN(nn.Module):
    def __init__(self, n_chars, char_dim=8, out_dim=12, kernel_size=3):
        super().__init__()
        self.embed = nn.Embedding(n_chars, char_dim, padding_idx=0)
        self.conv = nn.Conv1d(char_dim, out_dim, kernel_size, padding=1)

    def forward(self, chars):  # (batch, seq, max_word_len)
        b, s, w = chars.shape
        x = self.embed(chars.view(b * s, w)).transpose(1, 2)
        x = torch.relu(self.conv(x))
        x, _ = torch.max(x, dim=2)
        return x.view(b, s, -1)


class BiGRUCRF(nn.Module):
    def __init__(self, vocab_size, n_chars, num_tags, emb_dim=16, hidden_dim=16):
        super().__init__()
        self.word_embeds = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
        self.char_cnn = CharCNN(n_chars)
        self.dropout = nn.Dropout(0.1)
        self.rnn = nn.GRU(emb_dim + 12, hidden_dim // 2, num_layers=1, bidirectional=True,
                          batch_first=True)
        self.hidden2tag = nn.Linear(hidden_dim, num_tags)
        self.crf = CRF(num_tags, batch_first=True)

    def _get_features(self, words, chars, lengths):
        x = torch.cat([self.word_embeds(words), self.char_cnn(chars)], dim=-1)
        x = self.dropout(x)
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, h_n = self.rnn(packed)
        out, out_lengths = pad_packed_sequence(out, batch_first=True, total_length=words.size(1))
        return self.hidden2tag(self.dropout(out))

    def neg_log_likelihood(self, words, chars, lengths, tags):
        emissions = self._get_features(words, chars, lengths)
        mask = words.ne(0)
        return -self.crf(emissions, tags, mask=mask, reduction="mean")

    def forward(self, words, chars, lengths):
        emissions = self._get_features(words, chars, lengths)
        return self.crf.decode(emissions, mask=words.ne(0))


def collate(batch):
    words = [torch.tensor([word2idx.get(w, 1) for w in ws]) for ws, _ in batch]
    tags = [torch.tensor([tag2idx[t] for t in ts]) for _, ts in batch]
    lengths = torch.tensor([len(w) for w in words])
    max_wlen = max(len(w) for ws, _ in batch for w in ws)
    chars = torch.zeros(len(batch), int(lengths.max()), max_wlen, dtype=torch.long)
    for i, (ws, _) in enumerate(batch):
        for j, w in enumerate(ws):
            chars[i, j, :len(w)] = torch.tensor([char2idx.get(c, 0) for c in w])
    return (pad_sequence(words, batch_first=True), chars, lengths,
            pad_sequence(tags, batch_first=True, padding_value=0))


def spans(tag_seq):
    out, start, label = set(), None, None
    for i, t in enumerate(list(tag_seq) + ["O"]):
        if t.startswith("B-") or t == "O" or (t.startswith("I-") and t[2:] != label):
            if start is not None:
                out.add((start, i, label))
            start, label = (i, t[2:]) if t.startswith("B-") else (None, None)
    return out


def f1(model, sents):
    model.eval()
    tp = fp = fn = 0
    with torch.no_grad():
        words, chars, lengths, _ = collate(sents)
        preds = model(words, chars, lengths)
    for (ws, gold), pred in zip(sents, preds):
        p, g = spans([TAGS[i] for i in pred]), spans(gold)
        tp, fp, fn = tp + len(p & g), fp + len(p - g), fn + len(g - p)
    model.train()
    return 2 * tp / max(2 * tp + fp + fn, 1)


model = BiGRUCRF(len(word2idx), len(char2idx), len(TAGS), hidden_dim=args.hidden_dim)
print(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, weight_decay=1e-4, momentum=0.9)
train, dev = data[:40], data[40:]
for epoch in range(args.epochs):
    random.shuffle(train)
    total = 0.0
    for i in range(0, len(train), args.batch_size):
        words, chars, lengths, tags = collate(train[i:i + args.batch_size])
        model.zero_grad()
        loss = model.neg_log_likelihood(words, chars, lengths, tags)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch} loss {total / 5:.6f} dev f1 {f1(model, dev):.4f}")

words, chars, lengths, tags = collate(dev[:3])
model.eval()
with torch.no_grad():
    emissions = model._get_features(words, chars, lengths)
    llh = model.crf(emissions, tags, mask=words.ne(0), reduction="none")
    print("per-sentence log-likelihood", [f"{v:.5f}" for v in llh.tolist()])
    print("decoded", model(words, chars, lengths))
    print("lengths", lengths.tolist(), "gold", [[tag2idx[t] for t in ts] for _, ts in dev[:3]])

    # the PyTorch tutorial's Viterbi on one sentence agrees with the batched decode
    def viterbi_single(feats, crf):
        backpointers = []
        forward_var = crf.start_transitions + feats[0]
        for feat in feats[1:]:
            next_tag_var = forward_var.view(-1, 1) + crf.transitions
            best_tag_id = torch.argmax(next_tag_var, dim=0)
            backpointers.append(best_tag_id.tolist())
            forward_var = next_tag_var.max(0).values + feat
        terminal_var = forward_var + crf.end_transitions
        best_tag_id = torch.argmax(terminal_var).item()
        path_score = terminal_var[best_tag_id]
        best_path = [best_tag_id]
        for bptrs_t in reversed(backpointers):
            best_tag_id = bptrs_t[best_tag_id]
            best_path.append(best_tag_id)
        best_path.reverse()
        return path_score, best_path

    for k in range(3):
        score, path = viterbi_single(emissions[k, :lengths[k]], model.crf)
        print(f"sentence {k}: score {score.item():.5f} path {path}")
try:
    model.crf(emissions, tags, reduction="max")
except ValueError as e:
    print("ValueError:", e)
