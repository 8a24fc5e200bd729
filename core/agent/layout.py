"""Prompt layout 3: a request the next one repeats whole, through consolidations too.

The system prompt shows the session's memory *snapshot* and the history starts where it
started at the last re-base (core/log/promptbase.py); what memory changed since is told in
notes before the user messages that follow each change. So a consolidation changes neither
the system prompt nor where the history starts: the turn after it sends the previous
request again plus the new turn, and a provider's prompt cache serves it. Memory is never
stale: snapshot + notes in order is memory now.

The agent decides when a session's prompt starts over (:func:`rebase_due`; the user
message records it, so prompt time travel rebuilds the same request): at its first turn,
after a pause longer than a provider cache keeps a prefix (nothing cached is lost then),
when the prompt holds a window of messages consolidation already folded, when the notes
pass a tenth of the memory budget, or when the request nears the model's context window.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from memtray.core.agent.context import PromptContext, build_messages
from memtray.core.base.clock import parse_ts
from memtray.core.log import promptbase
from memtray.core.log.projections import SessionState, State
from memtray.core.log.sessions import Loader, get_history
from memtray.core.memory import scopes

#: how long providers keep a cached prefix (OpenAI and Anthropic: 5 minutes at least)
CACHE_LIFETIME = timedelta(minutes=5)


def prompt_messages(state: State, session: str, pctx: PromptContext, load: Loader | None = None,
                    *, format: int) -> list[dict[str, Any]]:
    """The request's messages for ``session`` in layout ``format`` (3: snapshot, notes and
    history from the re-base; 1 and 2: memory now and the unconsolidated history)."""
    s = state.sessions.get(session) or SessionState(session)
    shown = promptbase.view(state, s) if format >= 3 else None
    if shown is None:
        return build_messages(pctx.system_prompt(scopes.view(state.memory, s.scope), format=format),
                              get_history(s, load=load))
    snapshot, notes = shown
    # the global memory and the conversation's scope, never another scope's (notes are told by scope too)
    return build_messages(pctx.system_prompt(scopes.view(snapshot, s.scope), format=format),
                          get_history(s, load=load, start=s.prompt_base, notes=notes))


def rebase_due(state: State, session: str, now: datetime, *, window: int, memory_budget: int,
               request_tokens: float | None, context_tokens: Callable[[], int]) -> bool:
    """Whether ``session``'s next turn starts its prompt over (module doc)."""
    s = state.sessions.get(session)
    if s is None or s.prompt_base is None:
        return True
    shown = promptbase.view(state, s)
    if shown is None:
        return True
    if s.last_ts is not None and now - parse_ts(s.last_ts) > CACHE_LIFETIME:
        return True
    folded = s.last_consolidated - s.prompt_base
    if folded >= window:
        return True
    if sum(len(str(n[1])) for n in shown[1]) > memory_budget // 10:
        return True
    return folded > 0 and request_tokens is not None and request_tokens > 0.6 * context_tokens()
