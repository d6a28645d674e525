"""A Neural Turing Machine the way loudinthecloud/pytorch-ntm writes it (our own code after
its pattern): an ``NTMMemory`` whose bias is a registered buffer initialised uniformly and
reset per batch, content addressing by ``F.cosine_similarity`` over the memory with key
strength ``softplus``, gated interpolation, the circular shift as a convolution over a
wrapped-around weighting (``torch.cat`` of both ends and ``F.conv1d``), sharpening by a
power ``1 + softplus``, erase/add writes; an LSTM controller with learned initial states, read
and write heads split by ``torch.split`` of one linear layer, trained on the copy task with
RMSprop (momentum, alpha 0.95), ``clip_grad_value_`` and the bit-error cost."""
import random

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

random.seed(7)
np.random.seed(7)
torch.manual_seed(7)


def _convolve(w, s):
    assert s.size(0) == 3
    t = torch.cat([w[-1:], w, w[:1]])
    return F.conv1d(t.view(1, 1, -1), s.view(1, 1, -1)).view(-1)


class NTMMemory(nn.Module):
    def __init__(self, N, M):
        super().__init__()
        self.N, self.M = N, M
        self.register_buffer("mem_bias", torch.Tensor(N, M))
        stdev = 1 / (np.sqrt(N + M))
        nn.init.uniform_(self.mem_bias, -stdev, stdev)

    def reset(self, batch_size):
        self.batch_size = batch_size
        self.memory = self.mem_bias.clone().repeat(batch_size, 1, 1)

    def read(self, w):
        return torch.matmul(w.unsqueeze(1), self.memory).squeeze(1)

    def write(self, w, e, a):
        self.prev_mem = self.memory
        self.memory = torch.Tensor(self.batch_size, self.N, self.M)
        erase = torch.matmul(w.unsqueeze(-1), e.unsqueeze(1))
        add = torch.matmul(w.unsqueeze(-1), a.unsqueeze(1))
        self.memory = self.prev_mem * (1 - erase) + add

    def address(self, k, β, g, s, γ, w_prev):
        wc = self._similarity(k, β)
        wg = self._interpolate(w_prev, wc, g)
        ŵ = self._shift(wg, s)
        return self._sharpen(ŵ, γ)

    def _similarity(self, k, β):
        k = k.view(self.batch_size, 1, -1)
        return F.softmax(β * F.cosine_similarity(self.memory + 1e-16, k + 1e-16, dim=-1), dim=1)

    def _interpolate(self, w_prev, wc, g):
        return g * wc + (1 - g) * w_prev

    def _shift(self, wg, s):
        result = torch.zeros(wg.size())
        for b in range(self.batch_size):
            result[b] = _convolve(wg[b], s[b])
        return result

    def _sharpen(self, ŵ, γ):
        w = ŵ ** γ
        return torch.div(w, torch.sum(w, dim=1).view(-1, 1) + 1e-16)


def _split_cols(mat, lengths):
    assert mat.size()[1] == sum(lengths), "Lengths must be summed to num columns"
    ls = np.cumsum([0] + lengths)
    return [mat[:, s:e] for s, e in zip(ls[:-1], ls[1:])]


class NTMHead(nn.Module):
    def __init__(self, memory, controller_size, write):
        super().__init__()
        self.memory, self.write = memory, write
        N, M = memory.N, memory.M
        self.lengths = [M, 1, 1, 3, 1] + ([M, M] if write else [])
        self.fc = nn.Linear(controller_size, sum(self.lengths))
        nn.init.xavier_uniform_(self.fc.weight, gain=1.4)
        nn.init.normal_(self.fc.bias, std=0.01)

    def create_new_state(self, batch_size):
        return torch.zeros(batch_size, self.memory.N)

    def forward(self, embeddings, w_prev):
        o = self.fc(embeddings)
        parts = _split_cols(o, self.lengths)
        k, β, g, s, γ = parts[:5]
        β, g = F.softplus(β), torch.sigmoid(g)
        s, γ = F.softmax(s, dim=1), 1 + F.softplus(γ)
        w = self.memory.address(k, β, g, s, γ, w_prev)
        if self.write:
            e, a = torch.sigmoid(parts[5]), parts[6]
            self.memory.write(w, e, a)
            return w
        return self.memory.read(w), w


class NTM(nn.Module):
    def __init__(self, num_inputs, num_outputs, controller_size=24, N=12, M=6):
        super().__init__()
        self.num_inputs = num_inputs
        self.memory = NTMMemory(N, M)
        self.controller = nn.LSTM(num_inputs + M, controller_size)
        self.lstm_h_bias = nn.Parameter(torch.randn(1, 1, controller_size) * 0.05)
        self.lstm_c_bias = nn.Parameter(torch.randn(1, 1, controller_size) * 0.05)
        self.read_head = NTMHead(self.memory, controller_size, write=False)
        self.write_head = NTMHead(self.memory, controller_size, write=True)
        self.init_r = nn.Parameter(torch.randn(1, M) * 0.01)
        self.fc = nn.Linear(controller_size + M, num_outputs)

    def init_sequence(self, batch_size):
        self.memory.reset(batch_size)
        self.state = (self.init_r.repeat(batch_size, 1),
                      (self.lstm_h_bias.repeat(1, batch_size, 1),
                       self.lstm_c_bias.repeat(1, batch_size, 1)),
                      [self.read_head.create_new_state(batch_size),
                       self.write_head.create_new_state(batch_size)])

    def forward(self, x=None):
        if x is None:
            x = torch.zeros(self.memory.batch_size, self.num_inputs)
        prev_read, prev_ctrl, (w_r, w_w) = self.state
        inp = torch.cat([x, prev_read], dim=1)
        out, ctrl_state = self.controller(inp.unsqueeze(0), prev_ctrl)
        out = out.squeeze(0)
        read, w_r = self.read_head(out, w_r)
        w_w = self.write_head(out, w_w)
        self.state = (read, ctrl_state, [w_r, w_w])
        return torch.sigmoid(self.fc(torch.cat([out, read], dim=1))), self.state


def dataloader(num_batches, batch_size, seq_width, min_len, max_len):
    for batch_num in range(num_batches):
        seq_len = random.randint(min_len, max_len)
        seq = np.random.binomial(1, 0.5, (seq_len, batch_size, seq_width))
        seq = torch.from_numpy(seq)
        inp = torch.zeros(seq_len + 1, batch_size, seq_width + 1)
        inp[:seq_len, :, :seq_width] = seq
        inp[seq_len, :, seq_width] = 1.0
        yield batch_num + 1, inp.float(), seq.clone().float()


w = torch.tensor([0.1, 0.7, 0.2, 0.0])
print("shift:", [round(v, 4) for v in _convolve(w, torch.tensor([0.0, 0.0, 1.0])).tolist()],
      [round(v, 4) for v in _convolve(w, torch.tensor([0.25, 0.5, 0.25])).tolist()])
net = NTM(num_inputs=5, num_outputs=4)
print("params:", sum(p.numel() for p in net.parameters()), "buffers:",
      [n for n, _ in net.named_buffers()])
criterion = nn.BCELoss()
optimizer = torch.optim.RMSprop(net.parameters(), momentum=0.9, alpha=0.95, lr=1e-3)
for batch_num, X, Y in dataloader(8, 2, 4, 2, 4):
    optimizer.zero_grad()
    inp_seq_len, batch_size, _ = X.size()
    outp_seq_len = Y.size(0)
    net.init_sequence(batch_size)
    for i in range(inp_seq_len):
        net(X[i])
    y_out = torch.zeros(Y.size())
    for i in range(outp_seq_len):
        y_out[i], _ = net()
    loss = criterion(y_out, Y)
    loss.backward()
    for p in net.parameters():
        if p.grad is not None:
            p.grad.data.clamp_(-10, 10)
    nn.utils.clip_grad_value_(net.parameters(), 10)
    optimizer.step()
    y_out_binarized = y_out.clone().data
    y_out_binarized.apply_(lambda x: 0 if x < 0.5 else 1)
    cost = torch.sum(torch.abs(y_out_binarized - Y.data))
    print(f"batch {batch_num} len {outp_seq_len} loss {loss.item():.5f} cost {cost.item() / batch_size}")
_, (_, _, (w_r, w_w)) = None, net.state
print("read weights sum to one:", torch.allclose(w_r.sum(1), torch.ones(2)),
      "memory:", tuple(net.memory.memory.shape), f"{net.memory.memory.abs().mean().item():.5f}")
