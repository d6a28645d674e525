"""Offline RL the way kzl/decision-transformer (``gym/decision_transformer``) and
min-decision-transformer write it, on a tiny chain world: trajectories from a noisy
behaviour policy, discounted returns-to-go by a reversed ``cumsum`` trick, state-mean/std
normalisation in NumPy, ``(R, s, a)`` tokens interleaved by ``torch.stack(..., dim=1)``
and ``permute``/``reshape``, timestep embeddings, a GPT block with a causal mask
registered as a buffer, left-padding with attention masks, action prediction by
cross-entropy at the state tokens, ``LambdaLR`` warm-up with ``clip_grad_norm_ 0.25``,
and evaluation conditioned on target returns, ``get_action`` keeping the last K steps."""
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

seed = 0
random.seed(seed)
np.random.seed(seed)
torch.manual_seed(seed)

N_STATES, N_ACTIONS, HORIZON, K = 6, 2, 8, 4


def env_step(s, a):
    s2 = min(s + 1, N_STATES - 1) if a == 1 else max(s - 1, 0)
    return s2, (1.0 if s2 == N_STATES - 1 else 0.0)


def one_hot_state(s):
    v = np.zeros(N_STATES, dtype=np.float32)
    v[s] = 1.0
    return v


def collect(n, eps, rng):
    trajs = []
    for _ in range(n):
        s, obs, acts, rews = 0, [], [], []
        for _ in range(HORIZON):
            a = 1 if rng.rand() > eps else rng.randint(N_ACTIONS)
            s2, r = env_step(s, a)
            obs.append(one_hot_state(s) + rng.normal(0, 0.05, N_STATES).astype(np.float32))
            acts.append(a)
            rews.append(r)
            s = s2
        trajs.append({"observations": np.array(obs), "actions": np.array(acts), "rewards": np.array(rews)})
    return trajs


def discount_cumsum(x, gamma):
    out = np.zeros_like(x)
    out[-1] = x[-1]
    for t in reversed(range(x.shape[0] - 1)):
        out[t] = x[t] + gamma * out[t + 1]
    return out


rng = np.random.RandomState(0)
trajectories = collect(40, 0.6, rng)
states = np.concatenate([p["observations"] for p in trajectories], axis=0)
state_mean, state_std = np.mean(states, axis=0), np.std(states, axis=0) + 1e-6
returns = np.array([p["rewards"].sum() for p in trajectories])
print(f"{len(trajectories)} trajectories, return mean {returns.mean():.4f} max {returns.max():.1f}")
rtg_torch = torch.flip(torch.cumsum(torch.flip(torch.tensor(trajectories[0]["rewards"]), [0]), 0), [0])
assert np.allclose(rtg_torch.numpy(), discount_cumsum(trajectories[0]["rewards"], 1.0))
print("rtg of first", rtg_torch.tolist())


def get_batch(batch_size, g):
    idx = torch.randint(0, len(trajectories), (batch_size,), generator=g).tolist()
    s, a, r, ts, mask = [], [], [], [], []
    for i in idx:
        traj = trajectories[i]
        si = int(torch.randint(0, HORIZON - 1, (1,), generator=g))
        obs = (traj["observations"][si:si + K] - state_mean) / state_std
        tlen = obs.shape[0]
        rtg = discount_cumsum(traj["rewards"][si:], 1.0)[:tlen]
        pad = K - tlen
        s.append(np.concatenate([np.zeros((pad, N_STATES)), obs]))
        a.append(np.concatenate([np.full(pad, -100), traj["actions"][si:si + K]]))
        r.append(np.concatenate([np.zeros(pad), rtg]) / 4.0)
        ts.append(np.concatenate([np.zeros(pad), np.arange(si, si + tlen)]))
        mask.append(np.concatenate([np.zeros(pad), np.ones(tlen)]))
    return (torch.from_numpy(np.array(s)).float(), torch.from_numpy(np.array(a)).long(),
            torch.from_numpy(np.array(r)).float()[..., None], torch.from_numpy(np.array(ts)).long(),
            torch.from_numpy(np.array(mask)).float())


class Block(nn.Module):
    def __init__(self, h, n_head, max_T):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.attn = nn.MultiheadAttention(h, n_head, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(h, 4 * h), nn.GELU(), nn.Linear(4 * h, h))
        self.register_buffer("causal", torch.triu(torch.ones(max_T, max_T, dtype=torch.bool), 1))

    def forward(self, x, key_padding_mask):
        T = x.shape[1]
        y = self.ln1(x)
        x = x + self.attn(y, y, y, attn_mask=self.causal[:T, :T], key_padding_mask=key_padding_mask,
                          need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class DecisionTransformer(nn.Module):
    def __init__(self, state_dim, act_dim, hidden=32, max_ep_len=16, n_layer=2, n_head=2):
        super().__init__()
        self.hidden_size = hidden
        self.embed_timestep = nn.Embedding(max_ep_len, hidden)
        self.embed_return = nn.Linear(1, hidden)
        self.embed_state = nn.Linear(state_dim, hidden)
        self.embed_action = nn.Embedding(act_dim + 1, hidden)   # last row: the padded action
        self.embed_ln = nn.LayerNorm(hidden)
        self.blocks = nn.ModuleList([Block(hidden, n_head, 3 * K) for _ in range(n_layer)])
        self.predict_action = nn.Linear(hidden, act_dim)
        self.act_dim = act_dim

    def forward(self, states, actions, returns_to_go, timesteps, attention_mask):
        B, T = states.shape[:2]
        time_emb = self.embed_timestep(timesteps)
        a_in = torch.where(actions < 0, torch.full_like(actions, self.act_dim), actions)
        s = self.embed_state(states) + time_emb
        a = self.embed_action(a_in) + time_emb
        r = self.embed_return(returns_to_go) + time_emb
        h = torch.stack((r, s, a), dim=1).permute(0, 2, 1, 3).reshape(B, 3 * T, self.hidden_size)
        h = self.embed_ln(h)
        stacked_mask = torch.stack((attention_mask,) * 3, dim=1).permute(0, 2, 1).reshape(B, 3 * T)
        for blk in self.blocks:
            h = blk(h, key_padding_mask=stacked_mask == 0)
        h = h.reshape(B, T, 3, self.hidden_size).permute(0, 2, 1, 3)
        return self.predict_action(h[:, 1])

    @torch.no_grad()
    def get_action(self, states, actions, returns_to_go, timesteps):
        states, actions = states[:, -K:], actions[:, -K:]
        returns_to_go, timesteps = returns_to_go[:, -K:], timesteps[:, -K:]
        pad = K - states.shape[1]
        mask = torch.cat([torch.zeros(1, pad), torch.ones(1, states.shape[1])], dim=1)
        states = torch.cat([torch.zeros(1, pad, N_STATES), states], dim=1)
        actions = torch.cat([torch.full((1, pad), -100, dtype=torch.long), actions], dim=1)
        returns_to_go = torch.cat([torch.zeros(1, pad, 1), returns_to_go], dim=1)
        timesteps = torch.cat([torch.zeros(1, pad, dtype=torch.long), timesteps], dim=1)
        logits = self.forward(states, actions, returns_to_go, timesteps, mask)
        return logits[0, -1]


model = DecisionTransformer(N_STATES, N_ACTIONS)
print(model.blocks[0].attn)
warmup_steps = 5
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda steps: min((steps + 1) / warmup_steps, 1))
g = torch.Generator().manual_seed(1)
for it in range(40):
    s, a, r, ts, mask = get_batch(16, g)
    # the action at step t is predicted from tokens up to s_t: a_t itself is masked by causality
    logits = model(s, a, r, ts, mask)
    loss = F.cross_entropy(logits.reshape(-1, N_ACTIONS), a.reshape(-1), ignore_index=-100)
    optimizer.zero_grad()
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    optimizer.step()
    scheduler.step()
    if it % 10 == 9:
        print(f"iter {it + 1} action loss {loss.item():.5f} grad-norm {gn.item():.4f}")

model.eval()
for target_return in (1.0, 3.0):
    s, total = 0, 0.0
    st = torch.from_numpy((one_hot_state(s) - state_mean) / state_std).float().reshape(1, 1, -1)
    acts = torch.full((1, 1), -100, dtype=torch.long)
    rtg = torch.tensor([[[target_return / 4.0]]])
    ts = torch.zeros(1, 1, dtype=torch.long)
    probs = []
    for t in range(HORIZON):
        logits = model.get_action(st, acts, rtg, ts)
        p = logits.softmax(-1)
        probs.append(round(p[1].item(), 4))
        a = int(p.argmax())
        acts[0, -1] = a
        s, rew = env_step(s, a)
        total += rew
        st = torch.cat([st, torch.from_numpy((one_hot_state(s) - state_mean) / state_std).float().reshape(1, 1, -1)], 1)
        acts = torch.cat([acts, torch.full((1, 1), -100, dtype=torch.long)], 1)
        rtg = torch.cat([rtg, (rtg[:, -1] - rew / 4.0).reshape(1, 1, 1)], 1)
        ts = torch.cat([ts, torch.full((1, 1), t + 1, dtype=torch.long)], 1)
    print(f"target {target_return}: return {total} p(right) {probs}")
