"""REINFORCE and actor-critic on a tiny corridor environment, after
pytorch/examples/reinforcement_learning (no gym: the environment is written here)."""
import argparse
from collections import namedtuple
from itertools import count

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical, Normal, kl_divergence

parser = argparse.ArgumentParser(description='PyTorch actor-critic example')
parser.add_argument('--gamma', type=float, default=0.99, metavar='G')
parser.add_argument('--seed', type=int, default=543, metavar='N')
parser.add_argument('--episodes', type=int, default=30)
args = parser.parse_args()


class Corridor:
    """Walk right from cell 0 to cell 5; each step costs, reaching the end pays."""

    def __init__(self, length=5, seed=0):
        self.length = length
        self.rng = np.random.RandomState(seed)

    def reset(self):
        self.pos = 0
        return self._obs()

    def _obs(self):
        o = np.zeros(self.length + 1, dtype=np.float32)
        o[self.pos] = 1.0
        return o

    def step(self, action):
        self.pos = max(0, self.pos + (1 if action == 1 else -1))
        done = self.pos == self.length
        reward = 1.0 if done else -0.1
        return self._obs(), reward, done, {}


env = Corridor(seed=args.seed)
torch.manual_seed(args.seed)
SavedAction = namedtuple('SavedAction', ['log_prob', 'value'])


class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(6, 32)
        self.action_head = nn.Linear(32, 2)
        self.value_head = nn.Linear(32, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        state_values = self.value_head(x)
        return action_prob, state_values


model = Policy()
optimizer = optim.Adam(model.parameters(), lr=3e-2)
eps = np.finfo(np.float32).eps.item()


def select_action(state):
    state = torch.from_numpy(state).float()
    probs, state_value = model(state)
    m = Categorical(probs)
    action = m.sample()
    model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
    return action.item()


def finish_episode():
    R = 0
    saved_actions = model.saved_actions
    policy_losses = []
    value_losses = []
    returns = []
    for r in model.rewards[::-1]:
        R = r + args.gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for (log_prob, value), R in zip(saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
    optimizer.zero_grad()
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
    loss.backward()
    optimizer.step()
    del model.rewards[:]
    del model.saved_actions[:]


def main():
    running_reward = -10
    lengths = []
    for i_episode in range(args.episodes):
        state, ep_reward = env.reset(), 0
        for t in range(1, 100):
            action = select_action(state)
            state, reward, done, _ = env.step(action)
            model.rewards.append(reward)
            ep_reward += reward
            if done:
                break
        lengths.append(t)
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        finish_episode()
    print('episodes:', len(lengths), 'late episodes shorter:',
          np.mean(lengths[-5:]) <= np.mean(lengths[:5]) + 20)
    print('running reward is a float:', isinstance(running_reward, float))

    # the distributions used by continuous-control policies
    mu = torch.tensor([0.0, 1.0], requires_grad=True)
    log_std = torch.zeros(2, requires_grad=True)
    dist = Normal(mu, log_std.exp())
    a = torch.tensor([0.5, 0.5])
    logp = dist.log_prob(a).sum(-1)
    logp.backward()
    print('normal log_prob', round(logp.item(), 5), mu.grad.tolist(),
          [round(v, 5) for v in log_std.grad.tolist()])
    print('entropy', [round(v, 5) for v in dist.entropy().tolist()])
    old = Normal(torch.zeros(2), torch.ones(2))
    print('kl', [round(v, 5) for v in kl_divergence(dist, old).tolist()])
    cat = Categorical(logits=torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]))
    print('categorical', cat.probs.shape, [round(v, 5) for v in cat.entropy().tolist()],
          cat.log_prob(torch.tensor([2, 0])).tolist() == cat.logits.gather(
              1, torch.tensor([[2], [0]])).squeeze(1).tolist())
    print(cat.sample((4,)).shape, cat.batch_shape, cat.event_shape, dist)
    for t in count():
        if t == 2:
            break


if __name__ == '__main__':
    main()
