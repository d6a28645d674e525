"""``SyncVectorEnv`` with gymnasium 0.29's behaviour: an ended sub-environment resets at once,
and its last info and observation go to ``infos["final_info"]`` and
``infos["final_observation"]`` (object arrays, ``None`` elsewhere)."""

import numpy as np


class SyncVectorEnv:
    def __init__(self, env_fns):
        self.envs = [fn() for fn in env_fns]
        self.num_envs = len(self.envs)
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space

    def reset(self, seed=None, options=None):
        seeds = [None] * self.num_envs if seed is None else [seed + i for i in
                                                              range(self.num_envs)]
        obs = [env.reset(seed=s)[0] for env, s in zip(self.envs, seeds)]
        return np.stack(obs), {}

    def step(self, actions):
        obs, rewards, terms, truncs = [], [], [], []
        final = np.full(self.num_envs, None, dtype=object)
        final_obs = np.full(self.num_envs, None, dtype=object)
        for i, (env, action) in enumerate(zip(self.envs, actions)):
            o, r, term, trunc, info = env.step(action)
            if term or trunc:
                final[i], final_obs[i] = info, o
                o, _ = env.reset()
            obs.append(o)
            rewards.append(r)
            terms.append(term)
            truncs.append(trunc)
        infos = ({"final_info": final, "final_observation": final_obs}
                 if any(f is not None for f in final) else {})
        return (np.stack(obs), np.array(rewards), np.array(terms), np.array(truncs), infos)

    def close(self):
        for env in self.envs:
            env.close()
