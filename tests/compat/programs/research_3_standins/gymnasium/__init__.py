"""A seeded synthetic environment behind the parts of gymnasium's interface that cleanrl uses.

"PushCart": a 4-float observation drifts under a push (the action); the reward is 1 per
step (1 - x0**2 for the continuous variant), the episode terminates when the first
coordinate leaves [-1, 1] and is truncated after 25 steps. All randomness comes from a NumPy generator seeded by ``reset(seed=...)``, so
two frameworks driving it with equal actions see equal observations.
"""

import numpy as np

from . import spaces, vector, wrappers  # noqa: F401


class Env:
    """The synthetic environment: ``Pendulum-v1`` makes the continuous-action variant (the push
    is the action, clipped to [-2, 2]), any other ``env_id`` the two-action one."""

    def __init__(self, continuous=False):
        self.continuous = continuous
        self.observation_space = spaces.Box(-np.inf, np.inf, (4,), np.float32)
        self.action_space = (spaces.Box(-2.0, 2.0, (1,), np.float32) if continuous
                             else spaces.Discrete(2))
        self._rng = np.random.default_rng(0)
        self._state = np.zeros(4, np.float32)
        self._t = 0

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._state = self._rng.uniform(-0.2, 0.2, 4).astype(np.float32)
        self._t = 0
        return self._state.copy(), {}

    def step(self, action):
        if self.continuous:
            push = 0.1 * float(np.clip(np.asarray(action).reshape(-1)[0], -2.0, 2.0))
        else:
            push = 0.15 if int(action) == 1 else -0.15
        s = self._state
        noise = self._rng.normal(0.0, 0.05, 4)
        nxt = np.array([s[0] + 0.5 * s[1], 0.9 * s[1] + push + s[2], 0.8 * s[2] - 0.1 * s[3],
                        0.7 * s[3] + 0.2 * s[0]]) + noise
        self._state = nxt.astype(np.float32)
        self._t += 1
        terminated = bool(abs(self._state[0]) > 1.0)
        truncated = self._t >= 25
        reward = 1.0 - float(self._state[0] ** 2) if self.continuous else 1.0
        return self._state.copy(), reward, terminated, truncated, {}

    def close(self):
        pass


def make(env_id, **kwargs):
    return Env(continuous=env_id == "Pendulum-v1")
