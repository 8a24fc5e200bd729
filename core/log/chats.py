"""What a user does to a conversation besides talking in it: delete it (recoverably),
restore it, pin it, choose its model. Each is one local event on the session
(``session.deleted``, ``session.restored``, ``session.pinned``, ``session.model``),
folded into its :class:`~memtray.core.log.projections.SessionState`.

Deleting hides a conversation, it erases nothing: its messages stay in the log, in the
memory consolidated from them and in search (recall leaves it out meanwhile), so a
restore brings it back whole. Text
goes for good only through ``memtray purge`` (core/admin/purge.py), the one exception
to append-only. Like :mod:`~memtray.core.log.transcript`, these run where the state is
written (the worker).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtray.core.base.errors import MemtrayError
from memtray.core.log.events import SessionDeleted, SessionModel, SessionPinned, SessionRestored
from memtray.core.log.projections import SessionState, State

if TYPE_CHECKING:
    from memtray.core.log.store import Store

#: a model string as litellm takes it (``provider/name``, ``ollama/llava:13b``)
MAX_MODEL = 200


class ChatError(MemtrayError):
    """A conversation command that cannot be done (no such conversation, a bad model name)."""


def find(state: State, key: str) -> SessionState:
    """The conversation ``key`` (it must have events), or a ChatError that names how to list them."""
    s = state.sessions.get(key)
    if s is None:
        raise ChatError(f"no conversation {key!r}", hint="`memtray chats list --all` lists them, with their keys.")
    return s


def delete(store: Store, key: str) -> None:
    """Move ``key`` to "Recently deleted" (nothing is erased; :func:`restore` undoes it)."""
    s = find(store.state, key)
    if s.deleted is not None:
        raise ChatError(f"the conversation {key!r} is already deleted",
                        hint=f"`memtray chats restore {key}` brings it back.")
    store.append(SessionDeleted(), session=key)


def restore(store: Store, key: str) -> None:
    """Bring a deleted conversation back into the list, as it was."""
    s = find(store.state, key)
    if s.deleted is None:
        raise ChatError(f"the conversation {key!r} is not deleted")
    store.append(SessionRestored(), session=key)


def pin(store: Store, key: str, pinned: bool = True) -> bool:
    """Pin (or unpin) ``key``; returns whether anything changed."""
    s = find(store.state, key)
    if s.pinned == pinned:
        return False
    store.append(SessionPinned(pinned=pinned), session=key)
    return True


def check_model(model: str) -> str:
    """A model name as typed, checked: one word of at most :data:`MAX_MODEL` characters."""
    model = model.strip()
    if len(model) > MAX_MODEL or any(c.isspace() for c in model) or not model.isprintable():
        raise ChatError(f"{model[:60]!r} is not a model name",
                        hint="A litellm model string, e.g. openai/gpt-4o-mini or ollama/llava.")
    return model


def choose_model(store: Store, key: str, model: str) -> str:
    """Send the turns of ``key`` to ``model`` from now on ("": the configured model again).
    A conversation that has no message yet may choose too (the quick chat's new one).
    Returns the model as stored; nothing is appended when it is already the choice."""
    model = check_model(model)
    s = store.state.sessions.get(key)
    if (s.model if s is not None else None) == (model or None):
        return model
    store.append(SessionModel(model=model), session=key)
    return model


def model_of(state: State, key: str) -> str | None:
    """The model chosen for ``key``, None when it uses the configured one."""
    s = state.sessions.get(key)
    return s.model if s is not None else None
