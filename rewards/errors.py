"""The one error type of the reward library."""

from __future__ import annotations


class RewardSpecError(ValueError):
    """A reward specification (or a component's parameters) is invalid.

    The message names the offending field, what was wrong and what is allowed, e.g.
    ``components[1].params.max_len: must be an integer in [1, 1000000], got -3``.
    ``field`` carries the dotted path alone (``components[1].params.max_len``) so a form can put
    the message next to the right input.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.reason = message
        super().__init__(f"{field}: {message}" if field else message)

    def under(self, prefix: str) -> RewardSpecError:
        """The same error with its field nested under ``prefix`` (``x`` -> ``components[1].x``)."""
        field = f"{prefix}.{self.field}" if self.field else prefix
        return RewardSpecError(field, self.reason)
