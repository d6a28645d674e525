"""REINFORCE on a toy chain environment (pytorch/examples reinforce.py shape), plus a Gaussian
policy: Categorical/Normal log_prob, entropy, returns normalised with finfo eps."""
import argparse
from itertools import count
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical, Normal, Independent

parser = argparse.ArgumentParser(description='PyTorch REINFORCE example')
parser.add_argument('--gamma', type=float, default=0.99, metavar='G')
parser.add_argument('--seed', type=int, default=543, metavar='N')
args = parser.parse_args()
torch.manual_seed(args.seed)

class Env:
    def __init__(self):
        self.rs = np.random.RandomState(args.seed)
    def reset(self):
        self.t = 0
        self.s = self.rs.uniform(-1, 1, size=4).astype(np.float32)
        return self.s, {}
    def step(self, a):
        self.t += 1
        self.s = np.clip(self.s + (0.1 if a == 1 else -0.1), -2, 2).astype(np.float32)
        done = self.t >= 10
        return self.s, 1.0, done, False, {}

class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 16)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(16, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)

policy = Policy()
optimizer = optim.Adam(policy.parameters(), lr=1e-2)
eps = np.finfo(np.float32).eps.item()
print(eps, torch.finfo(torch.float32).eps, torch.finfo().tiny, torch.iinfo(torch.int64).max)
env = Env()

def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()

def finish_episode():
    R = 0
    policy_loss = []
    returns = []
    for r in policy.rewards[::-1]:
        R = r + args.gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]
    return returns

running_reward = 10
for i_episode in range(1, 4):
    state, _ = env.reset()
    ep_reward = 0
    for t in range(1, 10000):
        action = select_action(state)
        state, reward, done, _, _ = env.step(action)
        policy.rewards.append(reward)
        ep_reward += reward
        if done:
            break
    running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
    returns = finish_episode()
    print('Episode {}\tLast reward: {:.2f}\tAverage reward: {:.2f}'.format(i_episode, ep_reward, running_reward))
    print(returns)

# fixed-input distribution facts
probs = torch.tensor([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
m = Categorical(probs=probs)
print(m)
print(m.log_prob(torch.tensor([2, 0])), m.entropy(), m.probs.sum(-1), m.logits)
print(m.batch_shape, m.event_shape, m.sample().shape, m.sample((5,)).shape, m.param_shape)
print(m.enumerate_support().shape, m.mean if False else m.mode, m.support)
ml = Categorical(logits=torch.tensor([0.0, 1.0, 2.0]))
print(ml.probs, ml.log_prob(torch.tensor(1)))
mu = torch.tensor([0.0, 1.0], requires_grad=True)
log_std = torch.tensor([0.0, -1.0], requires_grad=True)
dist = Normal(mu, log_std.exp())
print(dist, dist.loc, dist.scale, dist.mean, dist.stddev, dist.variance)
a = torch.tensor([0.5, 0.5])
lp = dist.log_prob(a)
print(lp, dist.entropy(), dist.cdf(a), dist.icdf(torch.tensor([0.5, 0.9])))
(-lp.sum() - 0.01 * dist.entropy().sum()).backward()
print(mu.grad, log_std.grad)
d2 = Independent(Normal(torch.zeros(3), torch.ones(3)), 1)
print(d2, d2.batch_shape, d2.event_shape, d2.log_prob(torch.zeros(3)), d2.entropy())
x = dist.rsample()
print(x.requires_grad, x.shape, dist.sample().requires_grad, dist.has_rsample, m.has_rsample)
try:
    Normal(torch.tensor([0.0]), torch.tensor([-1.0]))
except ValueError as e:
    print('ValueError', 'scale' in str(e))
try:
    Categorical(probs).log_prob(torch.tensor([3, 0]))
except ValueError as e:
    print('ValueError', 'support' in str(e))
