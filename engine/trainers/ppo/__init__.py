"""PPO for causal language models, our own actor-critic trainer: the loop in ``trainer``, the
rollout in ``rollout``, the update in ``update``, the formulas in ``formulas``."""
