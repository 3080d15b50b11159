"""How much memory a dataset file takes once decoded, bounded before and while it is read.

A file's size says little about what it decodes to: 617 bytes of zstd Parquet hold a
dictionary-encoded column of 99,000 x 10,000 characters (990 MB as Python strings), and 30 MB
of ``[{},{},...]`` are ten million dicts (742 MB). Every reader of :mod:`engine.data.files`
spends a :class:`DecodedBudget` of ``DECODED_PER_FILE_BYTE`` x the file byte cap as it
decodes, and stops with an error naming ``max_file_mb`` when it runs out.
Parquet batches are sized from the metadata before any page is read
(:func:`parquet_batch_rows`), so no single batch can blow past the budget.

The costs are upper estimates of CPython's objects (``sys.getsizeof`` on 64-bit CPython
3.11): an empty dict is 64 bytes, a list 56, a short str about 50 plus its characters.
"""

from __future__ import annotations

import math
from typing import Any

#: Decoded bytes a read may hold per byte of the file cap (text data decodes to about its size).
DECODED_PER_FILE_BYTE = 2
CONTAINER_BYTES = 64  # a dict or a list
VALUE_BYTES = 48  # one more value: its slot and a small object
#: Decoded Arrow bytes of one Parquet batch: the rows per batch are chosen from the metadata.
PARQUET_BATCH_BYTES = 16 * 2**20


class DecodedBudget:
    """Decoded bytes left to one read of ``name`` (``file_cap`` is its byte cap)."""

    def __init__(self, name: str, file_cap: int) -> None:
        self.name = name
        self.limit = DECODED_PER_FILE_BYTE * file_cap
        self.used = 0

    def spend(self, cost: int) -> bool:
        """Spend ``cost`` bytes; False once the read is over its limit."""
        self.used += cost
        return self.used <= self.limit

    def problem(self) -> str:
        return (
            f"dataset file {self.name!r} decodes to more than {self.limit / 1e6:,.0f} MB in "
            f"memory ({DECODED_PER_FILE_BYTE}x the file cap); use a smaller file or raise "
            "max_file_mb"
        )


def json_cost(text: str) -> int:
    """An upper estimate of the bytes ``json.loads(text)`` takes: its characters, a container
    per bracket and a value per separator (brackets and separators inside strings count too,
    which only over-estimates)."""
    containers = text.count("{") + text.count("[")
    values = text.count(",") + text.count(":")
    return len(text) + CONTAINER_BYTES * containers + VALUE_BYTES * (values + 1)


def record_cost(record: dict[str, Any]) -> int:
    """An estimate of a flat record's bytes (a Parquet or CSV row as Python objects)."""
    size = CONTAINER_BYTES + VALUE_BYTES * len(record)
    for value in record.values():
        if isinstance(value, str | bytes):
            size += len(value)
    return size


def parquet_batch_rows(group: Any) -> int:
    """Rows per Parquet batch so that one batch decodes to at most ``PARQUET_BATCH_BYTES``,
    from a row group's metadata alone (``pyarrow``'s ``RowGroupMetaData``).

    A dictionary-encoded value can be as long as its column chunk's uncompressed pages (the
    dictionary page is among them), and each row may repeat it: such a column costs
    rows x chunk size. A plain column decodes to at most its uncompressed pages in all.
    """
    per_row = 0
    rows = max(1, group.num_rows)
    for i in range(group.num_columns):
        chunk = group.column(i)
        if chunk.has_dictionary_page:
            values_per_row = math.ceil(chunk.num_values / rows)
            per_row += chunk.total_uncompressed_size * max(1, values_per_row)
    return max(1, min(1024, PARQUET_BATCH_BYTES // max(1, per_row)))


def parquet_pages_bytes(group: Any) -> int:
    """The uncompressed bytes of a row group's pages (the dictionary pages included): the
    reader decompresses them, so they count against the cap before anything is read."""
    return sum(group.column(i).total_uncompressed_size for i in range(group.num_columns))
