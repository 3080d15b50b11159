"""Why a dataset cannot be used: the errors every reader of prompt data raises, named by the
``DataSpec`` field to change."""

from __future__ import annotations


class DatasetError(ValueError):
    """A dataset cannot be used as given; the message names the problem and the fix.

    ``field`` is the :class:`DataSpec` field to change (``path``, ``prompt_column``...), or ""
    when no single field is at fault.
    """

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.reason = message


class MissingColumnError(DatasetError):
    """A mapped column is not in the data; ``columns`` are the ones it has (names only)."""

    def __init__(self, column: str, field: str, columns: list[str]) -> None:
        super().__init__(
            f"column {column!r} ({field}) not found; the dataset's columns are {columns}. "
            f"Set {field} to one of them.",
            field,
        )
        self.column = column
        self.columns = columns
