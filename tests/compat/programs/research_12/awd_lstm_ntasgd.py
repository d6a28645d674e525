"""AWD-LSTM the way salesforce/awd-lstm-lm and fastai's ``WeightDropout`` write it:
``embedded_dropout`` (a ``bernoulli_`` row mask on the embedding matrix, ``F.embedding``
with the module's ``padding_idx``/``max_norm`` arguments), ``LockedDropout`` (one mask per
sequence by ``new_empty(...).bernoulli_``), DropConnect on ``weight_hh_l0`` by deleting the
LSTM's parameter and setting a dropped tensor as a plain attribute before each call
(``flatten_parameters`` replaced by a no-op), ``batchify``/``get_batch`` with a
``repackage_hidden`` that detaches tuples, activation (AR) and temporal activation (TAR)
regularisation, variable BPTT lengths drawn from ``np.random``, ``clip_grad_norm_``, and
NT-ASGD: SGD until validation stops improving, then ``torch.optim.ASGD(t0=0, lambd=0.)``
whose averages ``optimizer.state[p]["ax"]`` are swapped in for evaluation."""
import math
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

np.random.seed(141)
torch.manual_seed(141)


def embedded_dropout(embed, words, dropout=0.1, scale=None):
    if dropout:
        mask = embed.weight.data.new().resize_((embed.weight.size(0), 1)).bernoulli_(1 - dropout)
        mask = mask.expand_as(embed.weight) / (1 - dropout)
        masked_embed_weight = mask * embed.weight
    else:
        masked_embed_weight = embed.weight
    if scale:
        masked_embed_weight = scale.expand_as(masked_embed_weight) * masked_embed_weight
    padding_idx = embed.padding_idx if embed.padding_idx is not None else -1
    return F.embedding(words, masked_embed_weight, padding_idx, embed.max_norm, embed.norm_type,
                       embed.scale_grad_by_freq, embed.sparse)


class LockedDropout(nn.Module):
    def forward(self, x, dropout=0.5):
        if not self.training or not dropout:
            return x
        m = x.data.new_empty(1, x.size(1), x.size(2)).bernoulli_(1 - dropout)
        mask = m.div_(1 - dropout).expand_as(x)
        return mask * x


class WeightDropout(nn.Module):
    def __init__(self, module, weight_p, layer_names=("weight_hh_l0",)):
        super().__init__()
        self.module, self.weight_p, self.layer_names = module, weight_p, list(layer_names)
        for layer in self.layer_names:
            w = getattr(self.module, layer)
            delattr(self.module, layer)
            self.register_parameter(f"{layer}_raw", nn.Parameter(w.data))
            setattr(self.module, layer, w.clone())
            if isinstance(self.module, nn.RNNBase):
                self.module.flatten_parameters = self._do_nothing

    def _setweights(self):
        for layer in self.layer_names:
            raw_w = getattr(self, f"{layer}_raw")
            w = F.dropout(raw_w, p=self.weight_p) if self.training else raw_w.clone()
            setattr(self.module, layer, w)

    def forward(self, *args):
        self._setweights()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            return self.module(*args)

    def _do_nothing(self):
        pass


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.4, dropouth=0.3, dropouti=0.5, dropoute=0.1,
                 wdrop=0.5):
        super().__init__()
        self.lockdrop = LockedDropout()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnns = nn.ModuleList([
            WeightDropout(nn.LSTM(ninp if l == 0 else nhid, nhid if l != nlayers - 1 else ninp, 1), wdrop)
            for l in range(nlayers)])
        self.decoder = nn.Linear(ninp, ntoken)
        self.decoder.weight = self.encoder.weight
        self.encoder.weight.data.uniform_(-0.1, 0.1)
        self.decoder.bias.data.fill_(0)
        self.ninp, self.nhid, self.nlayers = ninp, nhid, nlayers
        self.dropout, self.dropouti, self.dropouth, self.dropoute = dropout, dropouti, dropouth, dropoute

    def forward(self, input, hidden):
        emb = embedded_dropout(self.encoder, input, dropout=self.dropoute if self.training else 0)
        raw_output = self.lockdrop(emb, self.dropouti)
        new_hidden, raw_outputs, outputs = [], [], []
        for l, rnn in enumerate(self.rnns):
            raw_output, new_h = rnn(raw_output, hidden[l])
            new_hidden.append(new_h)
            raw_outputs.append(raw_output)
            if l != self.nlayers - 1:
                raw_output = self.lockdrop(raw_output, self.dropouth)
                outputs.append(raw_output)
        output = self.lockdrop(raw_output, self.dropout)
        outputs.append(output)
        return self.decoder(output.view(-1, output.size(2))), new_hidden, raw_outputs, outputs

    def init_hidden(self, bsz):
        weight = next(self.parameters()).data
        return [(weight.new_zeros(1, bsz, self.nhid if l != self.nlayers - 1 else self.ninp),
                 weight.new_zeros(1, bsz, self.nhid if l != self.nlayers - 1 else self.ninp))
                for l in range(self.nlayers)]


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


def repackage_hidden(h):
    return h.detach() if isinstance(h, torch.Tensor) else tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, seq_len):
    seq_len = min(seq_len, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


text = ("the cat sat on the mat and the dog sat on the log while the bird sang in the tree " * 10).split()
vocab = sorted(set(text))
ids = torch.tensor([vocab.index(w) for w in text])
train_data, val_data = batchify(ids[:160], 4), batchify(ids[160:], 2)
print("train", tuple(train_data.shape), "val", tuple(val_data.shape))
model = RNNModel(len(vocab), 12, 16, 2)
print(model.rnns[0])
print("parameters", sorted(n for n, _ in model.named_parameters())[:4])
criterion = nn.CrossEntropyLoss()
params = list(model.parameters())
optimizer = torch.optim.SGD(params, lr=2.0, weight_decay=1.2e-6)
BPTT, ALPHA, BETA, CLIP = 8, 2.0, 1.0, 0.25


def evaluate(data_source, batch_size):
    model.eval()
    total_loss, hidden = 0.0, model.init_hidden(batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, BPTT):
            data, targets = get_batch(data_source, i, BPTT)
            output, hidden, _, _ = model(data, hidden)
            total_loss += len(data) * criterion(output, targets).item()
            hidden = repackage_hidden(hidden)
    return total_loss / len(data_source)


def train_epoch():
    model.train()
    total_loss, hidden, batch, i = 0.0, model.init_hidden(4), 0, 0
    while i < train_data.size(0) - 1 - 1:
        bptt = BPTT if np.random.random() < 0.95 else BPTT / 2.0
        seq_len = max(3, int(np.random.normal(bptt, 2)))
        lr2 = optimizer.param_groups[0]["lr"]
        optimizer.param_groups[0]["lr"] = lr2 * seq_len / BPTT
        data, targets = get_batch(train_data, i, seq_len)
        hidden = repackage_hidden(hidden)
        optimizer.zero_grad()
        output, hidden, rnn_hs, dropped_rnn_hs = model(data, hidden)
        raw_loss = criterion(output, targets)
        loss = raw_loss
        loss = loss + sum(ALPHA * dropped_rnn_h.pow(2).mean() for dropped_rnn_h in dropped_rnn_hs[-1:])
        loss = loss + sum(BETA * (rnn_h[1:] - rnn_h[:-1]).pow(2).mean() for rnn_h in rnn_hs[-1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, CLIP)
        optimizer.step()
        optimizer.param_groups[0]["lr"] = lr2
        total_loss += raw_loss.item()
        batch, i = batch + 1, i + seq_len
    return total_loss / batch


best_val, stored_loss, nonmono = [], 1e8, 1
for epoch in range(1, 8):
    train_loss = train_epoch()
    if "t0" in optimizer.param_groups[0]:
        tmp = {}
        for prm in model.parameters():
            tmp[prm] = prm.data.clone()
            prm.data = optimizer.state[prm]["ax"].clone()
        val_loss = evaluate(val_data, 2)
        for prm in model.parameters():
            prm.data = tmp[prm].clone()
        kind = "ASGD"
    else:
        val_loss = evaluate(val_data, 2)
        kind = "SGD"
        if len(best_val) > nonmono and val_loss > min(best_val[:-nonmono]):
            print("Switching to ASGD")
            optimizer = torch.optim.ASGD(model.parameters(), lr=2.0, t0=0, lambd=0.0, weight_decay=1.2e-6)
        best_val.append(val_loss)
    if val_loss < stored_loss:
        stored_loss = val_loss
    print(f"| end of epoch {epoch:3d} | {kind} | train loss {train_loss:5.3f} | valid loss {val_loss:5.3f} | "
          f"valid ppl {math.exp(val_loss):8.3f}")
print("best valid loss", round(stored_loss, 4), "optimizer", type(optimizer).__name__)
if isinstance(optimizer, torch.optim.ASGD):
    st = optimizer.state[model.decoder.bias]
    print("ASGD state", sorted(st), "eta", st["eta"].item(), "mu", st["mu"].item())
print("raw hh norm", model.rnns[0].weight_hh_l0_raw.norm().item(),
      "module attr is Parameter:", isinstance(model.rnns[0].module.weight_hh_l0, nn.Parameter))
