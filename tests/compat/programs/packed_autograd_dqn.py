"""Packed sequences (pad_sequence, pack_padded_sequence sorted and unsorted, pack_sequence into GRU/LSTM), the custom autograd Function tutorial (LegendrePolynomial3, gradcheck, setup_context + vmap), and the DQN tutorial's replay memory and optimisation step without gym."""
import math, random
from collections import namedtuple, deque
from itertools import count
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence, pack_sequence
torch.manual_seed(0); random.seed(0)
# packed sequences
seqs = [torch.tensor([1, 2, 3]), torch.tensor([4, 5]), torch.tensor([6])]
lengths = torch.tensor([len(s) for s in seqs])
padded = pad_sequence(seqs, batch_first=True); print(padded)
emb = nn.Embedding(10, 4); rnn = nn.GRU(4, 5, batch_first=True, bidirectional=True)
packed = pack_padded_sequence(emb(padded), lengths, batch_first=True, enforce_sorted=True)
print(type(packed).__name__, packed.batch_sizes, packed.data.shape)
out, h = rnn(packed); unpacked, lens = pad_packed_sequence(out, batch_first=True)
print(unpacked.shape, lens, h.shape)
p2 = pack_padded_sequence(emb(padded[[2, 0, 1]]), lengths[[2, 0, 1]], batch_first=True, enforce_sorted=False)
print(p2.sorted_indices, p2.unsorted_indices)
ps = pack_sequence([torch.ones(2, 3), torch.ones(1, 3)]); print(ps.batch_sizes)
lstm = nn.LSTM(3, 4); o, (hh, cc) = lstm(ps); print(hh.shape, type(o).__name__)
try:
    pack_padded_sequence(padded, torch.tensor([1, 3, 2]), batch_first=True)
except RuntimeError as e:
    print('RuntimeError', str(e)[:80])
# custom autograd Function (tutorial)
class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input); return 0.5 * (5 * input ** 3 - 3 * input)
    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors; return grad_output * 1.5 * (5 * input ** 2 - 1)
dtype = torch.float; device = torch.device("cpu")
x = torch.linspace(-math.pi, math.pi, 200, device=device, dtype=dtype); y = torch.sin(x)
a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)
learning_rate = 5e-6
for t in range(200):
    P3 = LegendrePolynomial3.apply
    y_pred = a + b * P3(c + d * x)
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99: print(t, round(loss.item(), 3))
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad; b -= learning_rate * b.grad; c -= learning_rate * c.grad; d -= learning_rate * d.grad
        a.grad = None; b.grad = None; c.grad = None; d.grad = None
print(f'Result: y = {abs(a.item()):.4f} + {b.item():.4f} * P3({c.item():.4f} + {d.item():.4f} x)')
class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_non_differentiable
        ctx.save_for_backward(x); return x.clamp(min=0)
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors; gi = g.clone(); gi[x < 0] = 0; return gi
xx = torch.randn(5, dtype=torch.double, requires_grad=True)
print(torch.autograd.gradcheck(MyReLU.apply, (xx,)))
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(i): return i.exp()
    @staticmethod
    def setup_context(ctx, inputs, output): ctx.save_for_backward(output)
    @staticmethod
    def backward(ctx, g): r, = ctx.saved_tensors; return g * r
    @staticmethod
    def vmap(info, in_dims, x): return Exp.apply(x), in_dims[0]
print(torch.func.vmap(Exp.apply)(torch.zeros(3)), torch.func.grad(lambda z: Exp.apply(z).sum())(torch.zeros(2)))
# DQN pieces without gym
Transition = namedtuple('Transition', ('state', 'action', 'next_state', 'reward'))
class ReplayMemory(object):
    def __init__(self, capacity): self.memory = deque([], maxlen=capacity)
    def push(self, *args): self.memory.append(Transition(*args))
    def sample(self, batch_size): return random.sample(self.memory, batch_size)
    def __len__(self): return len(self.memory)
class DQN(nn.Module):
    def __init__(self, n_observations, n_actions):
        super(DQN, self).__init__()
        self.layer1 = nn.Linear(n_observations, 32); self.layer2 = nn.Linear(32, 32); self.layer3 = nn.Linear(32, n_actions)
    def forward(self, x):
        x = F.relu(self.layer1(x)); x = F.relu(self.layer2(x)); return self.layer3(x)
policy_net = DQN(4, 2); target_net = DQN(4, 2); target_net.load_state_dict(policy_net.state_dict())
optimizer = optim.AdamW(policy_net.parameters(), lr=1e-4, amsgrad=True); memory = ReplayMemory(1000)
for i in range(64):
    s = torch.randn(1, 4); a = torch.tensor([[random.randrange(2)]], dtype=torch.long)
    ns = None if i % 10 == 9 else torch.randn(1, 4); memory.push(s, a, ns, torch.tensor([1.0]))
transitions = memory.sample(32); batch = Transition(*zip(*transitions))
non_final_mask = torch.tensor(tuple(map(lambda s: s is not None, batch.next_state)), dtype=torch.bool)
non_final_next_states = torch.cat([s for s in batch.next_state if s is not None])
state_batch = torch.cat(batch.state); action_batch = torch.cat(batch.action); reward_batch = torch.cat(batch.reward)
state_action_values = policy_net(state_batch).gather(1, action_batch)
next_state_values = torch.zeros(32)
with torch.no_grad():
    next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values
expected = (next_state_values * 0.99) + reward_batch
criterion = nn.SmoothL1Loss(); loss = criterion(state_action_values, expected.unsqueeze(1))
optimizer.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100); optimizer.step()
tsd = target_net.state_dict(); psd = policy_net.state_dict()
for key in psd: tsd[key] = psd[key]*0.005 + tsd[key]*(1-0.005)
target_net.load_state_dict(tsd)
print(state_action_values.shape, non_final_mask.dtype, int(non_final_mask.sum()) == non_final_next_states.shape[0])
print(policy_net(torch.randn(1, 4)).max(1).indices.view(1, 1).shape)
