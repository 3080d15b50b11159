"""Reward Studio's reward library: components, registry, spec, composer with traces.

Public entry points:

- :data:`rewards.registry.REGISTRY` — every component, its factory and parameters;
- :func:`rewards.verification.answers.extract_answer` — the final answer a completion gives;
- :class:`rewards.spec.RewardSpec` — a weighted choice of components, validated;
- :func:`rewards.composer.score` — per-sample totals with per-component traces;
- :func:`rewards.trl_adapter.to_trl` / :func:`rewards.trl_adapter.export_module` — for TRL;
- :func:`rewards.analysis.diagnostics.group_diagnostics`,
:func:`rewards.analysis.probes.run_probes`.
"""
