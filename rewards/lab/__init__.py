"""The reward lab: look at many weightings of one set of scores at once.

Every trace keeps each component's raw score, so comparing two specs, sweeping a weight or
re-scoring a finished run is re-weighting cached numbers with numpy, not generating again:

- :mod:`rewards.lab.matrix`: raw scores as a samples x components array, totals under any
  weights in the composer's order (so they equal its totals exactly);
- :mod:`rewards.lab.advantages`: GRPO advantages as TRL computes them (``scale_rewards``,
  ``multi_objective_aggregation``), vectorised over many weight vectors at once;
- :mod:`rewards.lab.probe_scores`: the hacking probes' edits scored once, re-weighted per point;
- :mod:`rewards.lab.compare`: A/B statistics between specs on the same generations;
- :mod:`rewards.lab.sweep`: one or two weights over a grid;
- :mod:`rewards.lab.rescore`: a spec applied to a finished run's stored samples.
"""
