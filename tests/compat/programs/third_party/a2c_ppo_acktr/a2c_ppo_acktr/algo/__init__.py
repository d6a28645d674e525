# From https://github.com/ikostrikov/pytorch-a2c-ppo-acktr-gail (a2c_ppo_acktr/algo/__init__.py), commit 41332b78dfb50321c29bade65f9d244387f68a60, MIT License.
from .a2c_acktr import A2C_ACKTR
from .ppo import PPO