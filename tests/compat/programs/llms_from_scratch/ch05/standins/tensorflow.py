"""Stand-in for TensorFlow (not installed here): gpt_generate.py imports it at its top and uses
it only to read OpenAI's GPT-2 checkpoints, which the tests replace with seeded arrays."""
