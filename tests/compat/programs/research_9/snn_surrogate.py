"""Spiking neural networks the way snnTorch's tutorials and the SpyTorch notebooks write
them: a leaky integrate-and-fire neuron whose Heaviside spike has a fast-sigmoid surrogate
gradient (a ``torch.autograd.Function`` with ``ctx.save_for_backward`` and a class-level
``scale``), subtractive reset with ``detach``, rate coding by ``torch.bernoulli``, latency
coding, membrane and spike records stacked over time, ``mse_count_loss``-style targets on
spike counts, backpropagation through time with ``torch.optim.Adam``, and accuracy by spike
counts; the surrogate's gradient checked with ``torch.autograd.gradcheck`` in float64."""
import torch
import torch.nn as nn

dtype = torch.float
device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
torch.manual_seed(1)


class SurrGradSpike(torch.autograd.Function):
    scale = 10.0

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        out = torch.zeros_like(input)
        out[input > 0] = 1.0
        return out

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad = grad_input / (SurrGradSpike.scale * torch.abs(input) + 1.0) ** 2
        return grad


spike_fn = SurrGradSpike.apply


class Leaky(nn.Module):
    def __init__(self, beta, threshold=1.0, learn_beta=False, reset_mechanism="subtract"):
        super().__init__()
        beta = torch.as_tensor(beta)
        if learn_beta:
            self.beta = nn.Parameter(beta)
        else:
            self.register_buffer("beta", beta)
        self.threshold = threshold
        self.reset_mechanism = reset_mechanism

    def init_leaky(self):
        return torch.zeros(0)

    def forward(self, input_, mem):
        if mem.numel() == 0:
            mem = torch.zeros_like(input_)
        reset = (mem - self.threshold > 0).float().detach() if self.reset_mechanism else 0
        if self.reset_mechanism == "subtract":
            mem = self.beta.clamp(0, 1) * mem + input_ - reset * self.threshold
        else:
            mem = self.beta.clamp(0, 1) * mem + input_ - reset * mem
        spk = spike_fn(mem - self.threshold)
        return spk, mem


def rate(data, num_steps, gain=1.0):
    clipped = torch.clamp(data * gain, 0, 1)
    return torch.bernoulli(clipped.unsqueeze(0).repeat(num_steps, *([1] * data.dim())))


def latency(data, num_steps, tau=5, threshold=0.01):
    data = torch.clamp(data, threshold + 1e-6, 1)
    spike_time = tau * torch.log(data / (data - threshold))
    spike_time = (spike_time - spike_time.min()) / (spike_time.max() - spike_time.min()) * (num_steps - 1)
    idx = torch.round(spike_time).long()
    out = torch.zeros(num_steps, *data.shape)
    return out.scatter(0, idx.unsqueeze(0), 1.0)


class Net(nn.Module):
    def __init__(self, num_inputs, num_hidden, num_outputs, beta=0.9):
        super().__init__()
        self.fc1 = nn.Linear(num_inputs, num_hidden)
        self.lif1 = Leaky(beta=beta)
        self.fc2 = nn.Linear(num_hidden, num_outputs)
        self.lif2 = Leaky(beta=beta, learn_beta=True, reset_mechanism="zero")

    def forward(self, x):
        mem1, mem2 = self.lif1.init_leaky(), self.lif2.init_leaky()
        spk2_rec, mem2_rec = [], []
        for step in range(x.size(0)):
            cur1 = self.fc1(x[step])
            spk1, mem1 = self.lif1(cur1, mem1)
            cur2 = self.fc2(spk1)
            spk2, mem2 = self.lif2(cur2, mem2)
            spk2_rec.append(spk2)
            mem2_rec.append(mem2)
        return torch.stack(spk2_rec, dim=0), torch.stack(mem2_rec, dim=0)


def mse_count_loss(spk_out, targets, correct_rate=0.8, incorrect_rate=0.2):
    num_steps, _, num_outputs = spk_out.shape
    spike_count = spk_out.sum(0)
    on_target = torch.ones_like(spike_count) * num_steps * correct_rate
    off_target = torch.ones_like(spike_count) * num_steps * incorrect_rate
    one_hot = nn.functional.one_hot(targets, num_outputs).float()
    spike_count_target = one_hot * on_target + (1 - one_hot) * off_target
    return nn.functional.mse_loss(spike_count, spike_count_target) / num_steps


x64 = torch.randn(6, dtype=torch.float64, requires_grad=True)
print("gradcheck surrogate:", torch.autograd.gradcheck(
    lambda v: (SurrGradSpike.apply(v) * 0 + v * 0).sum() + (v / (10 * v.abs() + 1)).sum(), (x64,)))
v = torch.tensor([-0.5, -0.05, 0.0, 0.05, 0.5], requires_grad=True)
s = spike_fn(v)
s.sum().backward()
print("spikes", s.tolist(), "surrogate grad", [round(g, 5) for g in v.grad.tolist()])

num_inputs, num_hidden, num_outputs, num_steps = 20, 32, 3, 15
g = torch.Generator().manual_seed(0)
protos = torch.rand(num_outputs, num_inputs, generator=g)
labels = torch.arange(24) % num_outputs
data = (protos[labels] + 0.15 * torch.rand(24, num_inputs, generator=g)).clamp(0, 1)
lat = latency(data[:2], num_steps)
print("latency code:", tuple(lat.shape), lat.sum(0).unique().tolist(),
      "first spike times:", lat[:, 0, :4].argmax(0).tolist())

net = Net(num_inputs, num_hidden, num_outputs).to(device)
optimizer = torch.optim.Adam(net.parameters(), lr=5e-3, betas=(0.9, 0.999))
for epoch in range(6):
    spk_in = rate(data, num_steps)
    spk_rec, mem_rec = net(spk_in)
    loss_val = mse_count_loss(spk_rec, labels)
    optimizer.zero_grad()
    loss_val.backward()
    optimizer.step()
    acc = (spk_rec.sum(0).argmax(1) == labels).float().mean()
    print(f"epoch {epoch} in-spikes {int(spk_in.sum())} out-spikes {int(spk_rec.sum())} "
          f"loss {loss_val.item():.5f} acc {acc.item():.4f} beta {net.lif2.beta.item():.5f}")

with torch.no_grad():
    spk_rec, mem_rec = net(rate(data, num_steps))
print("mem record:", tuple(mem_rec.shape), "counts:", spk_rec.sum(0)[:3].tolist())
