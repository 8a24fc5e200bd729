"""The one ``save_memory`` request: consolidation, redo and rebuilds all send it.

The prompt shows memory with its fact ids and the messages to consolidate; past
:data:`NEAR_BUDGET` of the memory budget it also asks the model to compress by
merging facts. The call is forced to ``save_memory`` and bounded by a timeout.
"""

from __future__ import annotations

import asyncio
from typing import Any

from memtray import resources
from memtray.core.llm.client import LLMClient, LLMResult, Request
from memtray.core.memory import facts
from memtray.core.memory.facts import Ledger
from memtray.core.memory.guard import SAVE_MEMORY, format_messages


async def request_save_memory(
    llm: LLMClient, timeout: float, memory: str, messages: list[dict[str, Any]], model: str | None,
    template: str | None = None, *, ledger: Ledger | None = None, budget: int | None = None,
    scope: str | None = None,
) -> LLMResult:
    """Ask the model for ``save_memory`` over ``messages`` on top of ``memory`` (forced tool call).

    Shared by consolidation, redo and rebuilds so every path sends the same request. With
    ``ledger`` the memory is shown with its fact ids; past 80 % of ``budget`` characters the
    model is asked to compress it by merging facts. ``scope``: the conversation's memory scope,
    which the model is told about (new facts go there unless about the user in general).
    """
    text = template if template is not None else resources.text("prompts/consolidation.md")
    shown = facts.render(ledger, memory) if ledger is not None and ledger.facts else memory.strip()
    if budget and len(memory) > NEAR_BUDGET * budget:
        shown += "\n\n" + resources.text("prompts/memory_budget.txt").strip().replace(
            "{size}", f"{len(memory):,}").replace("{budget}", f"{budget:,}")
    if scope and scope != "global":  # a scoped conversation: where its facts go (core/memory/scopereply.py)
        shown += "\n\n" + resources.text("prompts/memory_scopes.txt").strip().replace("{scope}", scope)
    prompt = text.replace("{memory}", shown or "(empty)").replace(
        "{conversation}", format_messages(messages))
    await llm.ready(model)  # the timeout is the model's time to answer, not litellm's import
    return await asyncio.wait_for(
        llm.complete(Request(
            messages=[{"role": "system", "content": "You consolidate memory by calling save_memory."},
                      {"role": "user", "content": prompt}],
            tools=[SAVE_MEMORY],
            tool_choice={"type": "function", "function": {"name": "save_memory"}},
            model=model,
            temperature=0.0,
        )),
        timeout=timeout,
    )


#: share of ``memory_budget`` past which consolidations compress and the user is told
NEAR_BUDGET = 0.8
