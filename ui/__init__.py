"""Reward Studio's Gradio dashboard: one module per tab, built by :func:`ui.app.build_app`.

Tabs (``build_<tab>(ctx)``): :mod:`ui.design`, :mod:`ui.preview`, :mod:`ui.train`,
:mod:`ui.runs`, :mod:`ui.compare`; named API endpoints in :mod:`ui.api`. The state that matters
is in plain dataclasses tested without Gradio: :class:`ui.spec_form.SpecForm` (the Design form),
:class:`ui.preview_state.PreviewCache` (generations re-scored on every reward change),
:class:`ui.run_state.RunView` (the selected run's points and read cursors), and
:mod:`ui.train_form` (the Train form from ``RunConfig``). Handlers call engine, rewards and
storage; they never run SQL or torch themselves.
"""
