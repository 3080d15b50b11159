"""The one test of "is this a Hugging Face repo id", for models, reward models and datasets.

huggingface_hub's own ``validate_repo_id`` decides (letters, digits, '-', '_', '.'; no '--' or
'..'; not ending in '.git'; at most 96 characters). On top of it, an id must name its owner
(``owner/name``) unless the caller accepts the hub's owner-less legacy names (``gpt2``): web
inputs and reward models never do; the command line's model and dataset checks do.
"""

from __future__ import annotations

import re

# owner/name, each starting with a letter or digit (what a web form may send).
_OWNER_AND_NAME = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")


def is_hub_id(name: str, *, owner_required: bool = True) -> bool:
    """``name`` as the Hub spells a repo id; ``owner/name`` unless ``owner_required`` is off."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if owner_required and not _OWNER_AND_NAME.fullmatch(name):
        return False
    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True
