"""Reward Studio's Gradio dashboard: one module per tab, built by :func:`ui.factory.build_app`.

Tabs (``build_<tab>(ctx)``): :mod:`ui.design.tab`, :mod:`ui.preview.tab`, :mod:`ui.train.tab`,
:mod:`ui.runs.tab`, :mod:`ui.compare.tab`; named API endpoints in :mod:`ui.api`. The state that
matters is in plain dataclasses tested without Gradio: :class:`ui.design.spec_form.SpecForm` (the
Design form), :class:`ui.preview.cache.PreviewCache` (generations re-scored on every reward change),
:class:`ui.runs.state.RunView` (the selected run's points and read cursors), and
:mod:`ui.train.form` (the Train form from ``RunConfig``). Handlers call engine, rewards and
storage; they never run SQL or torch themselves.
"""
