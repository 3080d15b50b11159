"""GRPO and RLOO through TRL 1.16: one subclass per trainer (``grpo.py``, ``rloo.py``), each
TRL method we change overridden once, in the order TRL calls it, delegating to the small
helpers beside it; :mod:`.build` turns a RunConfig into a ready trainer.
``tests/engine/test_trl_contract.py`` pins the TRL signatures the overrides rely on."""
