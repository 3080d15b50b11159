"""Reward components, one module each; the registry (:mod:`rewards.registry`) lists them."""
