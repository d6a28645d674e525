"""The spaces cleanrl and its replay buffer look at, each with a seeded ``sample()``."""

import numpy as np


class Space:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype
        self._rng = np.random.default_rng(0)

    def seed(self, seed=None):
        self._rng = np.random.default_rng(seed)
        return [seed]


class Discrete(Space):
    def __init__(self, n):
        super().__init__((), np.int64)
        self.n = n

    def sample(self):
        return np.int64(self._rng.integers(self.n))


class Box(Space):
    def __init__(self, low, high, shape, dtype=np.float32):
        super().__init__(shape, dtype)
        self.low = np.full(self.shape, low, dtype)
        self.high = np.full(self.shape, high, dtype)

    def sample(self):
        return self._rng.uniform(self.low, self.high).astype(self.dtype)


class MultiDiscrete(Space):
    pass


class MultiBinary(Space):
    pass


class Dict(Space):
    pass
