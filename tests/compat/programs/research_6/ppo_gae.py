"""PPO the way cleanrl's ppo.py and ppo_continuous_action.py write it, on small environments
written in torch: layer_init with orthogonal weights, a Categorical actor and a Normal actor
with a state-independent log-std, rollout buffers filled under no_grad, GAE computed
backwards with nextnonterminal masks, minibatch epochs over a random permutation, the
clipped surrogate with approx_kl, a clipped value loss, the entropy bonus,
nn.utils.clip_grad_norm_, annealed learning rate, and explained variance."""
import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical
from torch.distributions.normal import Normal

torch.manual_seed(1)
np.random.seed(1)


class ChainEnv:
    """n-state chain: action 1 moves right, 0 moves left; reward at the right end."""

    def __init__(self, n_envs, length=5):
        self.n, self.length = n_envs, length
        self.pos = torch.zeros(n_envs, dtype=torch.long)
        self.t = torch.zeros(n_envs, dtype=torch.long)

    def obs(self):
        return nn.functional.one_hot(self.pos, self.length).float()

    def step(self, action):
        self.pos = (self.pos + 2 * action - 1).clamp(0, self.length - 1)
        self.t += 1
        reward = (self.pos == self.length - 1).float()
        done = (self.pos == self.length - 1) | (self.t >= 12)
        self.pos = torch.where(done, torch.zeros_like(self.pos), self.pos)
        self.t = torch.where(done, torch.zeros_like(self.t), self.t)
        return self.obs(), reward, done.float()


class PointEnv:
    """move a point toward the origin; continuous 2-d actions."""

    def __init__(self, n_envs):
        self.n = n_envs
        self.x = torch.randn(n_envs, 2)
        self.t = torch.zeros(n_envs)

    def step(self, action):
        self.x = self.x + 0.1 * action.clamp(-1, 1)
        self.t += 1
        reward = -self.x.norm(dim=1)
        done = self.t >= 10
        self.x = torch.where(done[:, None], torch.randn(self.n, 2), self.x)
        self.t = torch.where(done, torch.zeros_like(self.t), self.t)
        return self.x.clone(), reward, done.float()


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim, act_dim, continuous):
        super().__init__()
        self.continuous = continuous
        self.critic = nn.Sequential(layer_init(nn.Linear(obs_dim, 32)), nn.Tanh(),
                                    layer_init(nn.Linear(32, 1), std=1.0))
        self.actor = nn.Sequential(layer_init(nn.Linear(obs_dim, 32)), nn.Tanh(),
                                   layer_init(nn.Linear(32, act_dim), std=0.01))
        if continuous:
            self.actor_logstd = nn.Parameter(torch.zeros(1, act_dim))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        if self.continuous:
            mean = self.actor(x)
            std = torch.exp(self.actor_logstd.expand_as(mean))
            probs = Normal(mean, std)
            if action is None:
                action = probs.sample()
            return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)
        probs = Categorical(logits=self.actor(x))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def train(env, obs, agent, act_shape, iterations=4, num_steps=16, gamma=0.99, gae_lambda=0.95,
          update_epochs=3, num_minibatches=4, clip_coef=0.2, ent_coef=0.01, vf_coef=0.5,
          max_grad_norm=0.5, learning_rate=2.5e-3):
    num_envs = env.n
    batch_size = num_envs * num_steps
    minibatch_size = batch_size // num_minibatches
    optimizer = torch.optim.Adam(agent.parameters(), lr=learning_rate, eps=1e-5)
    obs_buf = torch.zeros((num_steps, num_envs) + obs.shape[1:])
    actions = torch.zeros((num_steps, num_envs) + act_shape)
    logprobs = torch.zeros((num_steps, num_envs))
    rewards = torch.zeros((num_steps, num_envs))
    dones = torch.zeros((num_steps, num_envs))
    values = torch.zeros((num_steps, num_envs))
    next_obs, next_done = obs, torch.zeros(num_envs)
    for iteration in range(1, iterations + 1):
        frac = 1.0 - (iteration - 1.0) / iterations
        optimizer.param_groups[0]["lr"] = frac * learning_rate
        for step in range(num_steps):
            obs_buf[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob
            next_obs, reward, next_done = env.step(action)
            rewards[step] = reward.view(-1)
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(num_steps)):
                if t == num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = (delta + gamma * gae_lambda * nextnonterminal *
                                              lastgaelam)
            returns = advantages + values
        b_obs = obs_buf.reshape((-1,) + obs.shape[1:])
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape((-1,) + act_shape)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)
        b_inds = np.arange(batch_size)
        clipfracs = []
        for epoch in range(update_epochs):
            np.random.shuffle(b_inds)
            for start in range(0, batch_size, minibatch_size):
                mb_inds = b_inds[start:start + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb_inds], b_actions.long()[mb_inds] if not act_shape
                    else b_actions[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > clip_coef).float().mean().item()]
                mb_advantages = b_advantages[mb_inds]
                mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()
                newvalue = newvalue.view(-1)
                v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                v_clipped = b_values[mb_inds] + torch.clamp(newvalue - b_values[mb_inds],
                                                            -clip_coef, clip_coef)
                v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
                entropy_loss = entropy.mean()
                loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef
                optimizer.zero_grad()
                loss.backward()
                grad_norm = nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
                optimizer.step()
        y_pred, y_true = b_values.numpy(), b_returns.numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        print(f"iter {iteration} reward {rewards.sum().item():.4f} v_loss {v_loss.item():.5f} "
              f"pg_loss {pg_loss.item():.5f} entropy {entropy_loss.item():.5f} "
              f"kl {approx_kl.item():.6f} clipfrac {np.mean(clipfracs):.4f} "
              f"grad {grad_norm.item():.5f} ev {explained_var:.4f}")


env = ChainEnv(4)
train(env, env.obs(), Agent(5, 2, continuous=False), ())
penv = PointEnv(4)
agent = Agent(2, 2, continuous=True)
train(penv, penv.x.clone(), agent, (2,))
print("logstd", [round(v, 5) for v in agent.actor_logstd.detach().flatten().tolist()])
