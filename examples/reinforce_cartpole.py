"""REINFORCE with a learned baseline on CartPole (gymnasium; no download needed).

A small policy network samples actions from a categorical distribution; after each episode
the discounted returns, normalised and reduced by a value-network baseline, weight the
log-probabilities of the actions taken (Williams, 1992). Training stops when the average
return over the last 100 episodes reaches ``--target`` (195 is the classic "solved" bar).

    python examples/reinforce_cartpole.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import ember as torch
from ember import nn
from ember.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _plot import save_loss_curve  # noqa: E402  (examples/_plot.py)
from _run import add_output_args, resolve_outputs  # noqa: E402


class Policy(nn.Module):
    def __init__(self, obs=4, actions=2, hidden=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.body(x)
        return self.pi(h), self.v(h).squeeze(-1)


def discounted(rewards, gamma):
    out, acc = [], 0.0
    for r in reversed(rewards):
        acc = r + gamma * acc
        out.append(acc)
    return out[::-1]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=1500)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--target", type=float, default=195.0)
    add_output_args(p, "reinforce_cartpole")
    p.add_argument("--seed", type=int, default=1)
    args = resolve_outputs(p.parse_args(argv), "reinforce_cartpole")

    import gymnasium as gym

    torch.manual_seed(args.seed)
    env = gym.make("CartPole-v1")
    policy = Policy()
    opt = torch.optim.Adam(policy.parameters(), lr=args.lr)
    g = torch.Generator().manual_seed(args.seed)
    returns, start, avg = [], time.perf_counter(), 0.0
    for episode in range(1, args.episodes + 1):
        obs, _ = env.reset(seed=args.seed + episode)
        logps, values, rewards = [], [], []
        done = False
        while not done:
            logits, value = policy(torch.from_numpy(np.asarray(obs, dtype=np.float32)))
            logp_all = F.log_softmax(logits, -1)
            action = torch.multinomial(logp_all.exp(), 1, generator=g).item()
            obs, reward, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
            logps.append(logp_all[action])
            values.append(value)
            rewards.append(float(reward))
        ret = torch.tensor(discounted(rewards, args.gamma))
        ret = (ret - ret.mean()) / (ret.std() + 1e-8) if len(rewards) > 1 else ret
        values_t = torch.stack(values)
        advantage = ret - values_t.detach()
        loss = -(torch.stack(logps) * advantage).sum() + F.smooth_l1_loss(values_t, ret,
                                                                           reduction="sum")
        opt.zero_grad()
        loss.backward()
        opt.step()
        returns.append(sum(rewards))
        avg = float(np.mean(returns[-100:]))
        if episode % 50 == 0:
            print(f"episode {episode}: return {returns[-1]:.0f}, average of last 100 "
                  f"{avg:.1f} ({time.perf_counter() - start:.0f}s)")
        if len(returns) >= 100 and avg >= args.target:
            print(f"solved after {episode} episodes: average return {avg:.1f}")
            break
    torch.save(policy.state_dict(), args.checkpoint)
    print(f"checkpoint saved to {args.checkpoint}")
    save_loss_curve(returns, args.plot, "REINFORCE on CartPole", ylabel="return",
                    xlabel="episode")
    return avg


if __name__ == "__main__":
    main()
