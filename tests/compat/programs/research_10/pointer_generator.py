"""Abstractive summarisation with copying the way atulkum/pointer_summarizer (the PyTorch
port of abisee's pointer-generator) writes it: article OOVs given temporary ids
(``article2ids``/``abstract2ids``), a packed bidirectional LSTM encoder with
``reduce_state``, Bahdanau attention with coverage (``coverage_loss`` as the sum of
``torch.min(attn, coverage)``), ``p_gen`` from context/state/input, the final distribution
``vocab_dist * p_gen`` extended with zeros and ``scatter_add`` of
``(1 - p_gen) * attn_dist`` over ``enc_batch_extend_vocab``, the masked NLL with
``torch.gather``, Adagrad with ``initial_accumulator_value`` and ``clip_grad_norm_``, and a
beam search whose hypotheses carry coverage and copy OOV words."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

torch.manual_seed(123)
PAD, UNK, START, STOP = 0, 1, 2, 3
vocab = ["[PAD]", "[UNK]", "[START]", "[STOP]"] + \
    "the a cat dog sat on mat ran in park big small red".split()
w2i = {w: i for i, w in enumerate(vocab)}
V = len(vocab)


def article2ids(words):
    ids, oovs = [], []
    for w in words:
        i = w2i.get(w, UNK)
        if i == UNK:
            if w not in oovs:
                oovs.append(w)
            ids.append(V + oovs.index(w))
        else:
            ids.append(i)
    return ids, oovs


def abstract2ids(words, article_oovs):
    ids = []
    for w in words:
        i = w2i.get(w, UNK)
        if i == UNK and w in article_oovs:
            ids.append(V + article_oovs.index(w))
        else:
            ids.append(i)
    return ids


pairs = [("the big cat sat on the mat", "cat sat mat"),
         ("a small dog ran in the park", "dog ran park"),
         ("the red fox ran in the park", "fox ran park"),
         ("a big owl sat on the red mat", "owl sat mat")]
batch = []
for art, abs_ in pairs:
    words = art.split()
    ext, oovs = article2ids(words)
    enc = [w2i.get(w, UNK) for w in words]
    tgt_ext = abstract2ids(abs_.split(), oovs) + [STOP]
    dec_in = [START] + [w2i.get(w, UNK) for w in abs_.split()]
    batch.append((enc, ext, oovs, dec_in, tgt_ext))
batch.sort(key=lambda b: -len(b[0]))
max_oovs = max(len(b[2]) for b in batch)
enc_lens = torch.tensor([len(b[0]) for b in batch])
enc_batch = nn.utils.rnn.pad_sequence([torch.tensor(b[0]) for b in batch], batch_first=True)
enc_ext = nn.utils.rnn.pad_sequence([torch.tensor(b[1]) for b in batch], batch_first=True)
enc_padding_mask = (enc_batch != PAD).float()
dec_batch = torch.tensor([b[3] for b in batch])
target_batch = torch.tensor([b[4] for b in batch])
dec_padding_mask = torch.ones_like(target_batch, dtype=torch.float)
print("oovs", [b[2] for b in batch], "extended ids", enc_ext[0].tolist(), target_batch.tolist())

emb_dim, hidden_dim = 12, 16


def init_lstm_wt(lstm):
    for names in lstm._all_weights:
        for name in names:
            if name.startswith("weight_"):
                wt = getattr(lstm, name)
                wt.data.uniform_(-0.02, 0.02)
            elif name.startswith("bias_"):
                bias = getattr(lstm, name)
                n = bias.size(0)
                start, end = n // 4, n // 2
                bias.data.fill_(0.)
                bias.data[start:end].fill_(1.)


class Encoder(nn.Module):
    def __init__(self):
        super(Encoder, self).__init__()
        self.embedding = nn.Embedding(V, emb_dim)
        self.lstm = nn.LSTM(emb_dim, hidden_dim, num_layers=1, batch_first=True,
                            bidirectional=True)
        init_lstm_wt(self.lstm)
        self.W_h = nn.Linear(hidden_dim * 2, hidden_dim * 2, bias=False)

    def forward(self, input, seq_lens):
        embedded = self.embedding(input)
        packed = pack_padded_sequence(embedded, seq_lens, batch_first=True)
        output, hidden = self.lstm(packed)
        encoder_outputs, _ = pad_packed_sequence(output, batch_first=True)
        encoder_outputs = encoder_outputs.contiguous()
        encoder_feature = encoder_outputs.view(-1, 2 * hidden_dim)
        encoder_feature = self.W_h(encoder_feature)
        return encoder_outputs, encoder_feature, hidden


class ReduceState(nn.Module):
    def __init__(self):
        super(ReduceState, self).__init__()
        self.reduce_h = nn.Linear(hidden_dim * 2, hidden_dim)
        self.reduce_c = nn.Linear(hidden_dim * 2, hidden_dim)

    def forward(self, hidden):
        h, c = hidden
        h_in = h.transpose(0, 1).contiguous().view(-1, hidden_dim * 2)
        hidden_reduced_h = F.relu(self.reduce_h(h_in))
        c_in = c.transpose(0, 1).contiguous().view(-1, hidden_dim * 2)
        hidden_reduced_c = F.relu(self.reduce_c(c_in))
        return (hidden_reduced_h.unsqueeze(0), hidden_reduced_c.unsqueeze(0))


class Attention(nn.Module):
    def __init__(self):
        super(Attention, self).__init__()
        self.W_c = nn.Linear(1, hidden_dim * 2, bias=False)
        self.decode_proj = nn.Linear(hidden_dim * 2, hidden_dim * 2)
        self.v = nn.Linear(hidden_dim * 2, 1, bias=False)

    def forward(self, s_t_hat, encoder_outputs, encoder_feature, enc_padding_mask, coverage):
        b, t_k, n = list(encoder_outputs.size())
        dec_fea = self.decode_proj(s_t_hat)
        dec_fea_expanded = dec_fea.unsqueeze(1).expand(b, t_k, n).contiguous()
        dec_fea_expanded = dec_fea_expanded.view(-1, n)
        att_features = encoder_feature + dec_fea_expanded
        coverage_input = coverage.view(-1, 1)
        att_features = att_features + self.W_c(coverage_input)
        e = torch.tanh(att_features)
        scores = self.v(e).view(-1, t_k)
        attn_dist_ = F.softmax(scores, dim=1) * enc_padding_mask
        normalization_factor = attn_dist_.sum(1, keepdim=True)
        attn_dist = attn_dist_ / normalization_factor
        attn_dist = attn_dist.unsqueeze(1)
        c_t = torch.bmm(attn_dist, encoder_outputs).view(-1, hidden_dim * 2)
        attn_dist = attn_dist.view(-1, t_k)
        coverage = coverage.view(-1, t_k) + attn_dist
        return c_t, attn_dist, coverage


class Decoder(nn.Module):
    def __init__(self):
        super(Decoder, self).__init__()
        self.attention_network = Attention()
        self.embedding = nn.Embedding(V, emb_dim)
        self.x_context = nn.Linear(hidden_dim * 2 + emb_dim, emb_dim)
        self.lstm = nn.LSTM(emb_dim, hidden_dim, num_layers=1, batch_first=True)
        init_lstm_wt(self.lstm)
        self.p_gen_linear = nn.Linear(hidden_dim * 4 + emb_dim, 1)
        self.out1 = nn.Linear(hidden_dim * 3, hidden_dim)
        self.out2 = nn.Linear(hidden_dim, V)

    def forward(self, y_t_1, s_t_1, encoder_outputs, encoder_feature, enc_padding_mask,
                c_t_1, extra_zeros, enc_batch_extend_vocab, coverage, step):
        y_t_1_embd = self.embedding(y_t_1)
        x = self.x_context(torch.cat((c_t_1, y_t_1_embd), 1))
        lstm_out, s_t = self.lstm(x.unsqueeze(1), s_t_1)
        h_decoder, c_decoder = s_t
        s_t_hat = torch.cat((h_decoder.view(-1, hidden_dim), c_decoder.view(-1, hidden_dim)), 1)
        c_t, attn_dist, coverage_next = self.attention_network(
            s_t_hat, encoder_outputs, encoder_feature, enc_padding_mask, coverage)
        coverage = coverage_next
        p_gen_input = torch.cat((c_t, s_t_hat, x), 1)
        p_gen = torch.sigmoid(self.p_gen_linear(p_gen_input))
        output = torch.cat((lstm_out.view(-1, hidden_dim), c_t), 1)
        output = self.out2(self.out1(output))
        vocab_dist = F.softmax(output, dim=1)
        vocab_dist_ = p_gen * vocab_dist
        attn_dist_ = (1 - p_gen) * attn_dist
        if extra_zeros is not None:
            vocab_dist_ = torch.cat([vocab_dist_, extra_zeros], 1)
        final_dist = vocab_dist_.scatter_add(1, enc_batch_extend_vocab, attn_dist_)
        return final_dist, s_t, c_t, attn_dist, p_gen, coverage


class Model(object):
    def __init__(self):
        self.encoder, self.decoder, self.reduce_state = Encoder(), Decoder(), ReduceState()
        self.decoder.embedding.weight = self.encoder.embedding.weight

    def parameters(self):
        seen = {}
        for m in (self.encoder, self.decoder, self.reduce_state):
            for p in m.parameters():
                seen[id(p)] = p
        return list(seen.values())


model = Model()
params = model.parameters()
optimizer = torch.optim.Adagrad(params, lr=0.15, initial_accumulator_value=0.1)
print(model.decoder.attention_network)
print("parameters", sum(p.numel() for p in params))
cov_loss_wt, eps = 1.0, 1e-12
extra_zeros = torch.zeros(len(batch), max_oovs)
for it in range(15):
    optimizer.zero_grad()
    encoder_outputs, encoder_feature, encoder_hidden = model.encoder(enc_batch, enc_lens)
    s_t_1 = model.reduce_state(encoder_hidden)
    c_t_1 = torch.zeros(len(batch), 2 * hidden_dim)
    coverage = torch.zeros(enc_batch.size())
    step_losses, p_gens = [], []
    for di in range(dec_batch.size(1)):
        y_t_1 = dec_batch[:, di]
        final_dist, s_t_1, c_t_1, attn_dist, p_gen, next_coverage = model.decoder(
            y_t_1, s_t_1, encoder_outputs, encoder_feature, enc_padding_mask, c_t_1,
            extra_zeros, enc_ext, coverage, di)
        target = target_batch[:, di]
        gold_probs = torch.gather(final_dist, 1, target.unsqueeze(1)).squeeze()
        step_loss = -torch.log(gold_probs + eps)
        step_coverage_loss = torch.sum(torch.min(attn_dist, coverage), 1)
        step_loss = step_loss + cov_loss_wt * step_coverage_loss
        coverage = next_coverage
        step_losses.append(step_loss * dec_padding_mask[:, di])
        p_gens.append(p_gen.mean().item())
    sum_losses = torch.sum(torch.stack(step_losses, 1), 1)
    loss = torch.mean(sum_losses / dec_padding_mask.sum(1))
    loss.backward()
    norm = nn.utils.clip_grad_norm_(model.encoder.parameters(), 2.0)
    nn.utils.clip_grad_norm_(model.decoder.parameters(), 2.0)
    nn.utils.clip_grad_norm_(model.reduce_state.parameters(), 2.0)
    optimizer.step()
    if it % 5 == 4:
        print(f"iter {it + 1} loss {loss.item():.4f} enc grad norm {norm.item():.4f} "
              f"p_gen {[round(p, 4) for p in p_gens]}")
print("final dist rows sum to one", torch.allclose(final_dist.sum(1), torch.ones(len(batch))),
      tuple(final_dist.shape))


def beam_search(idx, beam_size=3, max_dec_steps=5):
    enc, ext, oovs = batch[idx][0], batch[idx][1], batch[idx][2]
    with torch.no_grad():
        eo, ef, eh = model.encoder(torch.tensor([enc]), torch.tensor([len(enc)]))
        s = model.reduce_state(eh)
        beams = [([START], 0.0, s, torch.zeros(1, 2 * hidden_dim), torch.zeros(1, len(enc)))]
        results = []
        for step in range(max_dec_steps):
            cand = []
            for toks, lp, st, ct, cov in beams:
                last = toks[-1] if toks[-1] < V else UNK
                fd, st2, ct2, attn, pg, cov2 = model.decoder(
                    torch.tensor([last]), st, eo.expand(1, -1, -1), ef,
                    torch.ones(1, len(enc)), ct, torch.zeros(1, len(oovs)) if oovs else None,
                    torch.tensor([ext]), cov, step)
                topk_log_probs, topk_ids = torch.topk(torch.log(fd[0]), beam_size * 2)
                for p, i in zip(topk_log_probs.tolist(), topk_ids.tolist()):
                    cand.append((toks + [i], lp + p, st2, ct2, cov2))
            cand.sort(key=lambda h: h[1] / len(h[0]), reverse=True)
            beams = []
            for h in cand:
                if h[0][-1] == STOP:
                    if step >= 1:
                        results.append(h)
                else:
                    beams.append(h)
                if len(beams) == beam_size or len(results) == beam_size:
                    break
            if len(results) == beam_size:
                break
        if not results:
            results = beams
        best = max(results, key=lambda h: h[1] / len(h[0]))
    words = [vocab[i] if i < V else oovs[i - V] for i in best[0][1:] if i != STOP]
    return words, round(best[1], 4)


for i in range(len(batch)):
    print("decode", i, beam_search(i))
