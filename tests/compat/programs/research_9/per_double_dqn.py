"""Double DQN with prioritized experience replay the way rlcode/per, the Rainbow
repositories (Kaixhin/Rainbow's ``SegmentTree``) and the PyTorch DQN tutorial write it: a
NumPy sum tree sampled by stratified priorities, importance-sampling weights annealed by
``beta``, TD errors written back as new priorities, a dueling head (value + advantage minus
its mean), double-Q targets (``argmax`` by the online net, ``gather`` from the target net),
``F.smooth_l1_loss(reduction="none")`` weighted per sample, ``clip_grad_norm_``, a soft
target update by ``torch.no_grad()`` Polyak averaging (``mul_``/``add_`` over
``zip(parameters)``), epsilon-greedy with a decaying schedule, on a seeded chain MDP."""
import math
import random
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

Transition = namedtuple("Transition", ("state", "action", "next_state", "reward", "done"))
random.seed(0)
np.random.seed(0)
torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SumTree:
    write = 0

    def __init__(self, capacity):
        self.capacity = capacity
        self.tree = np.zeros(2 * capacity - 1)
        self.data = np.zeros(capacity, dtype=object)
        self.n_entries = 0

    def _propagate(self, idx, change):
        parent = (idx - 1) // 2
        self.tree[parent] += change
        if parent != 0:
            self._propagate(parent, change)

    def _retrieve(self, idx, s):
        left = 2 * idx + 1
        right = left + 1
        if left >= len(self.tree):
            return idx
        if s <= self.tree[left]:
            return self._retrieve(left, s)
        return self._retrieve(right, s - self.tree[left])

    def total(self):
        return self.tree[0]

    def add(self, p, data):
        idx = self.write + self.capacity - 1
        self.data[self.write] = data
        self.update(idx, p)
        self.write = (self.write + 1) % self.capacity
        self.n_entries = min(self.n_entries + 1, self.capacity)

    def update(self, idx, p):
        change = p - self.tree[idx]
        self.tree[idx] = p
        self._propagate(idx, change)

    def get(self, s):
        idx = self._retrieve(0, s)
        return idx, self.tree[idx], self.data[idx - self.capacity + 1]


class Memory:
    e, a, beta, beta_increment_per_sampling = 0.01, 0.6, 0.4, 0.05

    def __init__(self, capacity):
        self.tree = SumTree(capacity)

    def _get_priority(self, error):
        return (np.abs(error) + self.e) ** self.a

    def add(self, error, sample):
        self.tree.add(self._get_priority(error), sample)

    def sample(self, n):
        batch, idxs, priorities = [], [], []
        segment = self.tree.total() / n
        self.beta = np.min([1., self.beta + self.beta_increment_per_sampling])
        for i in range(n):
            a, b = segment * i, segment * (i + 1)
            s = random.uniform(a, b)
            idx, p, data = self.tree.get(s)
            priorities.append(p)
            batch.append(data)
            idxs.append(idx)
        sampling_probabilities = np.array(priorities) / self.tree.total()
        is_weight = np.power(self.tree.n_entries * sampling_probabilities, -self.beta)
        is_weight /= is_weight.max()
        return batch, idxs, is_weight

    def update(self, idx, error):
        self.tree.update(idx, self._get_priority(error))


class ChainEnv:
    """n states in a row; action 1 moves right (reward 1 at the end), action 0 resets."""

    def __init__(self, n=6):
        self.n = n

    def reset(self):
        self.s = 0
        return self._obs()

    def _obs(self):
        return np.eye(self.n, dtype=np.float32)[self.s]

    def step(self, a):
        if a == 1:
            self.s += 1
            if self.s == self.n - 1:
                return self._obs(), 1.0, True
            return self._obs(), -0.01, False
        self.s = 0
        return self._obs(), 0.0, False


class DuelingDQN(nn.Module):
    def __init__(self, n_obs, n_actions):
        super().__init__()
        self.feature = nn.Sequential(nn.Linear(n_obs, 32), nn.ReLU())
        self.value = nn.Linear(32, 1)
        self.advantage = nn.Linear(32, n_actions)

    def forward(self, x):
        x = self.feature(x)
        adv = self.advantage(x)
        return self.value(x) + adv - adv.mean(dim=1, keepdim=True)


env = ChainEnv()
policy_net = DuelingDQN(6, 2).to(device)
target_net = DuelingDQN(6, 2).to(device)
target_net.load_state_dict(policy_net.state_dict())
optimizer = optim.AdamW(policy_net.parameters(), lr=5e-3, amsgrad=True)
memory = Memory(64)
BATCH_SIZE, GAMMA, TAU = 16, 0.9, 0.05
EPS_START, EPS_END, EPS_DECAY = 0.9, 0.05, 60
steps_done = 0
tree = SumTree(4)
for k, p in enumerate([1.0, 2.0, 3.0, 4.0]):
    tree.add(p, k)
print("sum tree:", tree.total(), [tree.get(s)[2] for s in (0.5, 1.5, 5.9, 9.9)])


def select_action(state):
    global steps_done
    sample = random.random()
    eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1. * steps_done / EPS_DECAY)
    steps_done += 1
    if sample > eps_threshold:
        with torch.no_grad():
            return policy_net(state).max(1).indices.view(1, 1)
    return torch.tensor([[random.randrange(2)]], device=device, dtype=torch.long)


def optimize_model():
    transitions, idxs, is_weights = memory.sample(BATCH_SIZE)
    batch = Transition(*zip(*transitions))
    state_batch = torch.cat(batch.state)
    action_batch = torch.cat(batch.action)
    reward_batch = torch.cat(batch.reward)
    next_batch = torch.cat(batch.next_state)
    done_batch = torch.cat(batch.done)
    state_action_values = policy_net(state_batch).gather(1, action_batch)
    with torch.no_grad():
        next_actions = policy_net(next_batch).argmax(1, keepdim=True)
        next_values = target_net(next_batch).gather(1, next_actions).squeeze(1)
        expected = reward_batch + GAMMA * next_values * (1 - done_batch)
    errors = (state_action_values.squeeze(1) - expected).detach().abs().numpy()
    for i in range(BATCH_SIZE):
        memory.update(idxs[i], errors[i])
    loss = (torch.as_tensor(is_weights, dtype=torch.float32)
            * F.smooth_l1_loss(state_action_values.squeeze(1), expected, reduction="none")).mean()
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(policy_net.parameters(), 10.0)
    optimizer.step()
    return loss.item()


episode_returns = []
for i_episode in range(12):
    state = torch.tensor(env.reset(), device=device).unsqueeze(0)
    total, losses = 0.0, []
    for t in range(15):
        action = select_action(state)
        obs, reward, done = env.step(action.item())
        total += reward
        next_state = torch.tensor(obs, device=device).unsqueeze(0)
        memory.add(1.0, Transition(state, action, next_state, torch.tensor([reward]),
                                   torch.tensor([float(done)])))
        state = next_state
        if memory.tree.n_entries >= BATCH_SIZE:
            losses.append(optimize_model())
        with torch.no_grad():
            for tp, pp in zip(target_net.parameters(), policy_net.parameters()):
                tp.mul_(1 - TAU).add_(pp, alpha=TAU)
        if done:
            break
    episode_returns.append(total)
    print(f"episode {i_episode} steps {t + 1} return {total:.2f} "
          f"loss {np.mean(losses) if losses else float('nan'):.5f} beta {memory.beta:.2f}")
with torch.no_grad():
    q = policy_net(torch.eye(6))
print("greedy actions:", q.argmax(1).tolist(), "q:", [round(v, 4) for v in q[0].tolist()])
print(f"priority total {memory.tree.total():.5f}")
