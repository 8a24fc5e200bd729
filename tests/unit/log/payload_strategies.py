"""Hypothesis strategies for events: valid payloads of every registered class, read from the
same annotations the door checks (so a field added to a class is generated too), and
arbitrary JSON for hostile input."""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from typing import Any, Literal, Union

from hypothesis import strategies as st
from memtray.core.log.events import SCHEMA

TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)
JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
FIELD = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True)


def for_type(tp: Any) -> st.SearchStrategy[Any]:
    """Values of annotation ``tp`` (what the door accepts for it)."""
    if tp is Any or tp is object:
        return JSON
    if tp is str:
        return TEXT
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(-(2**40), 2**40)
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False) | st.integers(-1000, 1000)
    if tp is type(None):
        return st.none()
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return st.one_of(*(for_type(a) for a in args))
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (typing.Required, typing.NotRequired):
        return for_type(args[0])
    if origin in (list, tuple) or tp in (list, tuple):
        return st.lists(for_type(args[0]) if args else JSON, max_size=3)
    if origin is dict or tp is dict:
        return st.dictionaries(TEXT, for_type(args[1]) if len(args) == 2 else JSON, max_size=3)
    if isinstance(tp, type) and (dataclasses.is_dataclass(tp) or hasattr(tp, "__total__")):
        return payload(tp)
    raise TypeError(f"no strategy for {tp!r}")


def payload(cls: type, extra: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    """Payloads of a dataclass or TypedDict ``cls``: every required field, any optional ones,
    and (``extra``) members a newer version might add."""
    hints = typing.get_type_hints(cls)
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls) if f.init]
        required = {f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    else:
        names = list(hints)
        required = set(getattr(cls, "__required_keys__", set(names)))
    fixed = st.fixed_dictionaries(
        {n: for_type(hints[n]) for n in names if n in required},
        optional={n: for_type(hints[n]) for n in names if n not in required},
    )
    if not extra:
        return fixed
    unknown = st.dictionaries(FIELD.filter(lambda k: k not in hints), JSON, max_size=2)
    return st.builds(lambda a, b: {**b, **a}, fixed, unknown)


TYPES = sorted(SCHEMA.types)


@st.composite
def valid_event(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """(type, payload) of a registered type (origin marks left out: sync adds those)."""
    t = draw(st.sampled_from(TYPES))
    data = draw(payload(SCHEMA.types[t]))
    # what the door checks beyond the annotations: an attachment is named by its sha256
    for ref in data.get("attachments") or ():
        if isinstance(ref, dict) and "sha256" in ref:
            ref["sha256"] = draw(SHA256)
        if isinstance(ref, dict) and "size" in ref:
            ref["size"] = draw(st.integers(0, 2**40))
    if t == "device.named":  # a real device id, and a name of one short line that is not an id
        data["device"] = draw(DEVICE)
        data["name"] = draw(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=40)
                            .filter(lambda n: not re.fullmatch(r"d[0-9a-f]{12}", n.strip())))
    if t == "session.scope" and "scope" in data:  # a slug (it becomes a file name), or the global memory
        data["scope"] = draw(st.sampled_from(["", "global"]) | SCOPE)
    return t, data


SCOPE = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,31}", fullmatch=True)
SHA256 = st.from_regex(r"[0-9a-f]{64}", fullmatch=True)
DEVICE = st.from_regex(r"d[0-9a-f]{12}", fullmatch=True)
