"""A calculator tool that is safe on a public server: arithmetic parsed with ``ast``, never eval.

The expression is parsed into Python's syntax tree and walked by :func:`evaluate`, which knows
only numbers, ``+ - * / // % **``, unary signs and parentheses; names, calls, attributes and every
other node are refused. Each bound stops one way of making a call expensive:

* ``MAX_EXPRESSION_CHARS``: a 10 MB argument is refused before it is parsed;
* ``MAX_DEPTH``: deep nesting (``((((...))))``, ``-(-(-...))``) is refused by the walker, and the
  length bound keeps the parser itself far from Python's recursion limit;
* ``MAX_EXPONENT`` and ``MAX_RESULT_DIGITS``: ``9**9**9`` and ``10**10**6`` are refused before
  they are computed (the size of ``a**b`` is estimated from ``b * log10|a|`` first), so no
  exponent tower, huge product or huge shift runs.

Any refusal is a :class:`ToolError`, which TRL's tool loop turns into that call's error message
(``{"error": ...}``) and counts in ``tools/failure_frequency``; the rollout goes on.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from engine.tools.errors import ToolError

MAX_EXPRESSION_CHARS = 200
MAX_DEPTH = 32
MAX_EXPONENT = 1_000
MAX_RESULT_DIGITS = 100

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression with + - * / // % ** and parentheses.

    Args:
        expression: The arithmetic to compute, e.g. "17*3" or "(2+3)**2".
    """
    return format_number(evaluate(expression))


def evaluate(expression: str) -> int | float:
    """The value of ``expression``; :class:`ToolError` saying why when it is refused."""
    if not isinstance(expression, str):
        raise ToolError(f"expression must be text, got {type(expression).__name__}")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(
            f"expression of {len(expression):,} characters; at most {MAX_EXPRESSION_CHARS}"
        )
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ToolError(f"not arithmetic: {expression[:40]!r}") from None
    return _check_size(_walk(tree.body, 0))


def _walk(node: ast.AST, depth: int) -> int | float:
    if depth > MAX_DEPTH:
        raise ToolError(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_walk(node.operand, depth + 1))
    if isinstance(node, ast.BinOp):
        left = _walk(node.left, depth + 1)
        right = _walk(node.right, depth + 1)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        if type(node.op) not in _BINARY:
            raise ToolError(f"operator {type(node.op).__name__} is not allowed")
        if isinstance(node.op, ast.Mult) and _digits(left) + _digits(right) > MAX_RESULT_DIGITS:
            raise ToolError(f"result longer than {MAX_RESULT_DIGITS} digits")
        try:
            return _check_size(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise ToolError("division by zero") from None
        except OverflowError:
            raise ToolError("result too large") from None
    raise ToolError(f"only numbers and + - * / // % ** are allowed, not {type(node).__name__}")


def _power(base: int | float, exponent: int | float) -> int | float:
    # Estimated before computing: 9**9**9 is refused at 9**387420489, never evaluated.
    if abs(exponent) > MAX_EXPONENT:
        raise ToolError(f"exponent {format_number(exponent)} is larger than {MAX_EXPONENT}")
    if base != 0 and abs(exponent) * math.log10(abs(base)) > MAX_RESULT_DIGITS:
        raise ToolError(f"result longer than {MAX_RESULT_DIGITS} digits")
    try:
        result = base**exponent
    except ZeroDivisionError:
        raise ToolError("zero to a negative power") from None
    except OverflowError:
        raise ToolError("result too large") from None
    if isinstance(result, complex):
        raise ToolError("fractional power of a negative number")
    return result


def _digits(value: int | float) -> int:
    if isinstance(value, int):
        return len(str(abs(value))) if abs(value) < 10**MAX_RESULT_DIGITS else MAX_RESULT_DIGITS + 1
    return 0 if not math.isfinite(value) or abs(value) < 1 else int(math.log10(abs(value))) + 1


def _check_size(value: int | float) -> int | float:
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("result is not a finite number")
    if _digits(value) > MAX_RESULT_DIGITS:
        raise ToolError(f"result longer than {MAX_RESULT_DIGITS} digits")
    return value


def format_number(value: int | float) -> str:
    """``51`` for 51 and 51.0, ``0.333333333333`` for 1/3: short, like a desk calculator."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.12g}"
    return str(value)
