"""The JSON body parser of every API endpoint: DRF's, but a body nested deeper than
MAX_JSON_DEPTH is a 400 saying so. Python's decoder gives up on very deep nesting with a
RecursionError (a 500), and what it can decode could still exhaust the stack of whatever walks
it next; no request of the API nests more than a few levels."""

from __future__ import annotations

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError

MAX_JSON_DEPTH = 32


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(_too_deep()) from None
        if depth_over(data, MAX_JSON_DEPTH):
            raise ParseError(_too_deep())
        return data


def _too_deep() -> str:
    return (
        f"the JSON body nests arrays or objects more than {MAX_JSON_DEPTH} levels deep; "
        "no request of this API needs that many"
    )


def depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists or dicts deeper than ``limit``, found without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
