"""Transformer-XL the way kimiyoung/transformer-xl's PyTorch code writes it: sinusoidal
relative position embeddings over ``klen`` positions, ``RelPartialLearnableMultiHeadAttn``
with the ``r_w_bias``/``r_r_bias`` terms and the ``_rel_shift`` pad-and-view trick, a
causal mask that lets each query see ``mlen`` memory slots (``torch.triu`` with a
diagonal offset, ``masked_fill_`` with ``-float('inf')``), segment-level recurrence with
detached memories updated under ``no_grad``, an ``LMOrderedIterator`` over a token stream,
and evaluation that reuses the memory across longer segments."""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser(description="PyTorch Transformer Language Model")
parser.add_argument("--n_layer", type=int, default=2)
parser.add_argument("--n_head", type=int, default=2)
parser.add_argument("--d_head", type=int, default=8)
parser.add_argument("--d_model", type=int, default=16)
parser.add_argument("--d_inner", type=int, default=32)
parser.add_argument("--dropout", type=float, default=0.0)
parser.add_argument("--tgt_len", type=int, default=8)
parser.add_argument("--mem_len", type=int, default=8)
parser.add_argument("--eval_tgt_len", type=int, default=4)
parser.add_argument("--max_step", type=int, default=12)
parser.add_argument("--lr", type=float, default=2.5e-3)
parser.add_argument("--clip", type=float, default=0.25)
parser.add_argument("--seed", type=int, default=1111)
args = parser.parse_args()
torch.manual_seed(args.seed)


class PositionalEmbedding(nn.Module):
    def __init__(self, demb):
        super().__init__()
        self.demb = demb
        inv_freq = 1 / (10000 ** (torch.arange(0.0, demb, 2.0) / demb))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, pos_seq, bsz=None):
        sinusoid_inp = torch.ger(pos_seq, self.inv_freq)
        pos_emb = torch.cat([sinusoid_inp.sin(), sinusoid_inp.cos()], dim=-1)
        if bsz is not None:
            return pos_emb[:, None, :].expand(-1, bsz, -1)
        return pos_emb[:, None, :]


class PositionwiseFF(nn.Module):
    def __init__(self, d_model, d_inner, dropout, pre_lnorm=False):
        super().__init__()
        self.CoreNet = nn.Sequential(nn.Linear(d_model, d_inner), nn.ReLU(inplace=True),
                                     nn.Dropout(dropout), nn.Linear(d_inner, d_model),
                                     nn.Dropout(dropout))
        self.layer_norm = nn.LayerNorm(d_model)
        self.pre_lnorm = pre_lnorm

    def forward(self, inp):
        if self.pre_lnorm:
            return self.CoreNet(self.layer_norm(inp)) + inp
        return self.layer_norm(inp + self.CoreNet(inp))


class RelPartialLearnableMultiHeadAttn(nn.Module):
    def __init__(self, n_head, d_model, d_head, dropout):
        super().__init__()
        self.n_head, self.d_model, self.d_head = n_head, d_model, d_head
        self.qkv_net = nn.Linear(d_model, 3 * n_head * d_head, bias=False)
        self.r_net = nn.Linear(d_model, n_head * d_head, bias=False)
        self.drop = nn.Dropout(dropout)
        self.o_net = nn.Linear(n_head * d_head, d_model, bias=False)
        self.layer_norm = nn.LayerNorm(d_model)
        self.scale = 1 / (d_head ** 0.5)

    def _rel_shift(self, x, zero_triu=False):
        zero_pad = torch.zeros((x.size(0), 1, *x.size()[2:]), device=x.device, dtype=x.dtype)
        x_padded = torch.cat([zero_pad, x], dim=1)
        x_padded = x_padded.view(x.size(1) + 1, x.size(0), *x.size()[2:])
        x = x_padded[1:].view_as(x)
        if zero_triu:
            ones = torch.ones((x.size(0), x.size(1)))
            x = x * torch.tril(ones, x.size(1) - x.size(0))[:, :, None, None]
        return x

    def forward(self, w, r, r_w_bias, r_r_bias, attn_mask=None, mems=None):
        qlen, rlen, bsz = w.size(0), r.size(0), w.size(1)
        if mems is not None:
            cat = torch.cat([mems, w], 0)
            w_heads = self.qkv_net(cat)
            r_head_k = self.r_net(r)
            w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)
            w_head_q = w_head_q[-qlen:]
        else:
            w_heads = self.qkv_net(w)
            r_head_k = self.r_net(r)
            w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)
        klen = w_head_k.size(0)
        w_head_q = w_head_q.view(qlen, bsz, self.n_head, self.d_head)
        w_head_k = w_head_k.view(klen, bsz, self.n_head, self.d_head)
        w_head_v = w_head_v.view(klen, bsz, self.n_head, self.d_head)
        r_head_k = r_head_k.view(rlen, self.n_head, self.d_head)

        rw_head_q = w_head_q + r_w_bias
        AC = torch.einsum("ibnd,jbnd->ijbn", (rw_head_q, w_head_k))
        rr_head_q = w_head_q + r_r_bias
        BD = torch.einsum("ibnd,jnd->ijbn", (rr_head_q, r_head_k))
        BD = self._rel_shift(BD)

        attn_score = AC + BD
        attn_score.mul_(self.scale)
        if attn_mask is not None and attn_mask.any().item():
            if attn_mask.dim() == 2:
                attn_score = attn_score.float().masked_fill(
                    attn_mask[None, :, :, None], -float("inf")).type_as(attn_score)
            elif attn_mask.dim() == 3:
                attn_score = attn_score.float().masked_fill(
                    attn_mask[:, :, :, None], -float("inf")).type_as(attn_score)
        attn_prob = F.softmax(attn_score, dim=1)
        attn_prob = self.drop(attn_prob)
        attn_vec = torch.einsum("ijbn,jbnd->ibnd", (attn_prob, w_head_v))
        attn_vec = attn_vec.contiguous().view(attn_vec.size(0), attn_vec.size(1),
                                              self.n_head * self.d_head)
        attn_out = self.drop(self.o_net(attn_vec))
        return self.layer_norm(w + attn_out)


class RelPartialLearnableDecoderLayer(nn.Module):
    def __init__(self, n_head, d_model, d_head, d_inner, dropout):
        super().__init__()
        self.dec_attn = RelPartialLearnableMultiHeadAttn(n_head, d_model, d_head, dropout)
        self.pos_ff = PositionwiseFF(d_model, d_inner, dropout)

    def forward(self, dec_inp, r, r_w_bias, r_r_bias, dec_attn_mask=None, mems=None):
        output = self.dec_attn(dec_inp, r, r_w_bias, r_r_bias, attn_mask=dec_attn_mask,
                               mems=mems)
        return self.pos_ff(output)


class MemTransformerLM(nn.Module):
    def __init__(self, n_token, n_layer, n_head, d_model, d_head, d_inner, dropout, tgt_len,
                 mem_len):
        super().__init__()
        self.n_token, self.d_model, self.n_head, self.d_head = n_token, d_model, n_head, d_head
        self.word_emb = nn.Embedding(n_token, d_model)
        self.emb_scale = d_model ** 0.5
        self.drop = nn.Dropout(dropout)
        self.n_layer, self.tgt_len, self.mem_len = n_layer, tgt_len, mem_len
        self.layers = nn.ModuleList([RelPartialLearnableDecoderLayer(
            n_head, d_model, d_head, d_inner, dropout) for _ in range(n_layer)])
        self.out_layer = nn.Linear(d_model, n_token)
        self.out_layer.weight = self.word_emb.weight  # tied
        self.pos_emb = PositionalEmbedding(d_model)
        self.r_w_bias = nn.Parameter(torch.Tensor(n_head, d_head))
        self.r_r_bias = nn.Parameter(torch.Tensor(n_head, d_head))
        nn.init.normal_(self.r_w_bias, 0.0, 0.02)
        nn.init.normal_(self.r_r_bias, 0.0, 0.02)

    def reset_length(self, tgt_len, mem_len):
        self.tgt_len, self.mem_len = tgt_len, mem_len

    def init_mems(self):
        if self.mem_len > 0:
            param = next(self.parameters())
            return [torch.empty(0, dtype=param.dtype, device=param.device)
                    for _ in range(self.n_layer + 1)]
        return None

    def _update_mems(self, hids, mems, qlen, mlen):
        if mems is None:
            return None
        assert len(hids) == len(mems), "len(hids) != len(mems)"
        with torch.no_grad():
            new_mems = []
            end_idx = mlen + max(0, qlen)
            beg_idx = max(0, end_idx - self.mem_len)
            for i in range(len(hids)):
                cat = torch.cat([mems[i], hids[i]], dim=0)
                new_mems.append(cat[beg_idx:end_idx].detach())
        return new_mems

    def _forward(self, dec_inp, mems=None):
        qlen, bsz = dec_inp.size()
        word_emb = self.word_emb(dec_inp) * self.emb_scale
        mlen = mems[0].size(0) if mems is not None else 0
        klen = mlen + qlen
        dec_attn_mask = torch.triu(word_emb.new_ones(qlen, klen), diagonal=1 + mlen).byte()[
            :, :, None]
        hids = []
        pos_seq = torch.arange(klen - 1, -1, -1.0, device=word_emb.device, dtype=word_emb.dtype)
        pos_emb = self.drop(self.pos_emb(pos_seq))
        core_out = self.drop(word_emb)
        hids.append(core_out)
        for i, layer in enumerate(self.layers):
            mems_i = None if mems is None else mems[i]
            core_out = layer(core_out, pos_emb, self.r_w_bias, self.r_r_bias,
                             dec_attn_mask=dec_attn_mask.bool(), mems=mems_i)
            hids.append(core_out)
        core_out = self.drop(core_out)
        new_mems = self._update_mems(hids, mems, mlen, qlen)
        return core_out, new_mems

    def forward(self, data, target, *mems):
        if not mems:
            mems = self.init_mems()
        tgt_len = target.size(0)
        hidden, new_mems = self._forward(data, mems=mems)
        pred_hid = hidden[-tgt_len:]
        logit = self.out_layer(pred_hid.view(-1, pred_hid.size(-1)))
        loss = F.cross_entropy(logit, target.reshape(-1), reduction="none").view(tgt_len, -1)
        if new_mems is None:
            return [loss]
        return [loss] + new_mems


class LMOrderedIterator:
    def __init__(self, data, bsz, bptt, ext_len=None):
        self.bsz, self.bptt = bsz, bptt
        self.ext_len = ext_len if ext_len is not None else 0
        self.n_step = data.size(0) // bsz
        data = data.narrow(0, 0, self.n_step * bsz)
        self.data = data.view(bsz, -1).t().contiguous()
        self.n_batch = (self.n_step + self.bptt - 1) // self.bptt

    def get_batch(self, i, bptt=None):
        if bptt is None:
            bptt = self.bptt
        seq_len = min(bptt, self.data.size(0) - 1 - i)
        end_idx = i + seq_len
        beg_idx = max(0, i - self.ext_len)
        data = self.data[beg_idx:end_idx]
        target = self.data[i + 1:i + 1 + seq_len]
        return data, target, seq_len

    def __iter__(self):
        for i in range(0, self.data.size(0) - 1, self.bptt):
            yield self.get_batch(i)


def init_weight(weight):
    nn.init.normal_(weight, 0.0, 0.02)


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Linear") != -1:
        if hasattr(m, "weight") and m.weight is not None:
            init_weight(m.weight)
        if hasattr(m, "bias") and m.bias is not None:
            nn.init.constant_(m.bias, 0.0)
    elif classname.find("Embedding") != -1:
        if hasattr(m, "weight"):
            init_weight(m.weight)
    elif classname.find("LayerNorm") != -1:
        if hasattr(m, "weight"):
            nn.init.normal_(m.weight, 1.0, 0.02)
        if hasattr(m, "bias") and m.bias is not None:
            nn.init.constant_(m.bias, 0.0)


# a token stream with long-range structure: each "sentence" repeats its first token at the end
g = torch.Generator().manual_seed(0)
stream = []
for _ in range(60):
    body = torch.randint(3, 20, (5,), generator=g).tolist()
    stream += [1] + body + [body[0], 2]
corpus = torch.tensor(stream)
ntokens = 20
tr_iter = LMOrderedIterator(corpus[:400], bsz=4, bptt=args.tgt_len)
va_iter = LMOrderedIterator(corpus[400:], bsz=2, bptt=args.eval_tgt_len)
print("train batches", tr_iter.n_batch, "data", tuple(tr_iter.data.shape))

model = MemTransformerLM(ntokens, args.n_layer, args.n_head, args.d_model, args.d_head,
                         args.d_inner, args.dropout, args.tgt_len, args.mem_len)
model.apply(weights_init)
model.word_emb.apply(weights_init)
args.n_all_param = sum(p.nelement() for p in model.parameters())
print("#params = {}".format(args.n_all_param))
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, args.max_step, eta_min=0.0)

train_step = 0
mems = tuple()
model.train()
log_start_time = time.time()
while train_step < args.max_step:
    for batch, (data, target, seq_len) in enumerate(tr_iter):
        model.zero_grad()
        ret = model(data, target, *mems)
        loss, mems = ret[0], ret[1:]
        loss = loss.float().mean().type_as(loss)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        scheduler.step()
        train_step += 1
        if train_step % 4 == 0:
            print("| step {:>4d} | lr {:.3e} | loss {:5.6f} | ppl {:9.5f} | mem {}".format(
                train_step, optimizer.param_groups[0]["lr"], loss.item(),
                math.exp(loss.item()), tuple(mems[0].shape)))
        if train_step >= args.max_step:
            break


def evaluate(eval_iter, tgt_len, mem_len):
    model.eval()
    model.reset_length(tgt_len, mem_len)
    total_len, total_loss = 0, 0.0
    with torch.no_grad():
        mems = tuple()
        for i, (data, target, seq_len) in enumerate(eval_iter):
            ret = model(data, target, *mems)
            loss, mems = ret[0], ret[1:]
            total_loss += seq_len * loss.mean().float().item()
            total_len += seq_len
    model.reset_length(args.tgt_len, args.mem_len)
    model.train()
    return total_loss / total_len


for mem_len in (0, 4, 12):
    val = evaluate(va_iter, args.eval_tgt_len, mem_len)
    print("| eval mem_len {:2d} | valid loss {:.6f} | valid ppl {:9.5f}".format(
        mem_len, val, math.exp(val)))
attn = model.layers[0].dec_attn
x = torch.arange(2 * 3 * 4 * 1.0).view(2, 3, 4, 1)
print("rel_shift", attn._rel_shift(x)[..., 0, 0].tolist())
print("zero_triu", attn._rel_shift(x, zero_triu=True)[..., 0, 0].tolist())
print("mask", torch.triu(torch.ones(3, 5), diagonal=1 + 2).byte().tolist())
