"""Constant expressions of the maxas source language, evaluated when the kernel is assembled.

Two forms carry an expression (maxas ``MaxAs.pm`` / ``MaxAsGrammar.pm``):

- ``[+ EXPR +]`` anywhere in the source: replaced by the value of EXPR, in decimal (maxas runs the
  text between the brackets as Perl and pastes its result);
- ``Nx<EXPR>`` as an immediate operand (maxas's "index immediate", e.g. ``[readAs + 4x<2*64 + 32>]``):
  N times the value of EXPR, here written back in hexadecimal.

maxsim does not run Perl. EXPR must be integer arithmetic: decimal or hexadecimal numbers,
parentheses, unary ``- + ~``, and the binary operators ``+ - * / % ** << >> & | ^`` with
Python's (= Perl's) precedence; ``/`` must divide exactly. As in maxas, leading zeros do not
make a number octal (``4x<08>`` is 32). Anything else (a Perl variable, a function call, a
loop) is refused with an error naming its column: expand such input with ``maxas.pl -p`` first.
``[- CODE -]`` (Perl run for its side effects only) is refused the same way.
"""

from __future__ import annotations

import ast
import operator
import re

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Mod: operator.mod,
           ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
           ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
_LEADING_ZEROS = re.compile(r"(?<![\w.])0+(?=\d)")
_LIMIT = 1 << 64  # values beyond any immediate field: refused rather than computed at length

INLINE_RE = re.compile(r"\[([+-])(.*?)\1\]")
INDEX_RE = re.compile(r"(\d+)[xX]<([^>]*)>")


class ExpressionError(ValueError):
    """An expression that is not integer arithmetic; ``offset`` is the column within it."""

    def __init__(self, message, offset=0):
        super().__init__(message)
        self.offset = offset


def evaluate(text: str) -> int:
    """The integer value of the arithmetic expression ``text`` (see the module documentation).
    An :class:`ExpressionError` names the column of the expression's start within ``text`` (of a
    Perl variable: its ``$``)."""
    try:
        return _evaluate(text)
    except ExpressionError as e:
        if "$" not in text:
            e.offset = len(text) - len(text.lstrip())
        raise


def _evaluate(text: str) -> int:
    if "$" in text:
        raise ExpressionError(f"{text.strip()!r} uses a Perl variable: maxsim evaluates arithmetic only "
                              f"(expand the file with maxas.pl -p first)", text.index("$"))
    src = _LEADING_ZEROS.sub("", text.strip())
    if not src:
        raise ExpressionError("empty expression")
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError:
        raise ExpressionError(f"{text.strip()!r} is not an arithmetic expression") from None
    return _value(tree.body, text)


def _value(node, text) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_value(node.operand, text))
    if isinstance(node, ast.BinOp):
        a, b = _value(node.left, text), _value(node.right, text)
        if isinstance(node.op, ast.Div):
            if b == 0 or a % b:
                raise ExpressionError(f"{text.strip()!r}: {a} / {b} is not a whole number")
            return a // b
        if isinstance(node.op, (ast.Mod, ast.FloorDiv)) and b == 0:
            raise ExpressionError(f"{text.strip()!r}: division by zero")
        if isinstance(node.op, (ast.LShift, ast.RShift)) and not 0 <= b < 64:
            raise ExpressionError(f"{text.strip()!r}: shift by {b}")
        if isinstance(node.op, ast.Pow) and not (0 <= b < 64 and abs(a) < _LIMIT):
            raise ExpressionError(f"{text.strip()!r}: power {a} ** {b} is out of range")
        if type(node.op) in _BINARY:
            v = _BINARY[type(node.op)](a, b)
            if abs(v) >= _LIMIT:
                raise ExpressionError(f"{text.strip()!r}: value out of range")
            return v
    what = type(node).__name__
    raise ExpressionError(f"{text.strip()!r} is not integer arithmetic (found {what}): maxsim evaluates "
                          f"arithmetic only (expand the file with maxas.pl -p first)",
                          getattr(node, "col_offset", 0))
