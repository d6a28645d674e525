"""Empty stand-in: imported, never used, by nerf-pytorch's rendering code."""
