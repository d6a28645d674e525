"""``RecordEpisodeStatistics``: adds ``info["episode"] = {"r", "l"}`` when an episode ends."""

import numpy as np


class RecordEpisodeStatistics:
    def __init__(self, env):
        self.env = env
        self.observation_space, self.action_space = env.observation_space, env.action_space
        self._r, self._l = 0.0, 0

    def reset(self, **kwargs):
        self._r, self._l = 0.0, 0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._r += reward
        self._l += 1
        if terminated or truncated:
            info = dict(info, episode={"r": np.array([self._r], np.float32),
                                       "l": np.array([self._l], np.int32)})
        return obs, reward, terminated, truncated, info

    def close(self):
        self.env.close()
