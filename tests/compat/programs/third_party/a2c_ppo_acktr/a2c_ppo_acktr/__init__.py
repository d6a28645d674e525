# From https://github.com/ikostrikov/pytorch-a2c-ppo-acktr-gail (a2c_ppo_acktr/__init__.py), commit 41332b78dfb50321c29bade65f9d244387f68a60, MIT License.
