"""The agent turn: log the user's message, build the prompt, call the model, run tools.

Every message of a turn (user, assistant, tool call, tool result) is an event
appended as it happens, so a crash or provider failure loses nothing and the
user's message is in the log even when the provider fails. The tool loop has an
iteration cap. Each assistant message records the sha256 of the exact request
it answered (``request_hash``) so past prompts can be reconstructed and checked.
Attachments are stored (core/log/attachments.py) before the user message that
references them is logged, and only after the model is known to take them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memtray.core.agent.context import (
    PROMPT_FORMAT,
    PromptContext,
    identity_text,
    load_bootstrap,
    load_skills,
    runtime_context,
    zone_of,
)
from memtray.core.agent.layout import prompt_messages, rebase_due
from memtray.core.base.clock import Clock
from memtray.core.base.config import Config
from memtray.core.base.errors import LLMError, MemtrayError
from memtray.core.base.redact import redact, redact_obj
from memtray.core.llm import localmodel
from memtray.core.llm.client import DeltaCallback, LLMClient, Request, context_window
from memtray.core.llm.tools import ToolContext, ToolRegistry
from memtray.core.log import chats
from memtray.core.log.attachments import AttachmentStore, Prepared
from memtray.core.log.events import (
    ContextChanged,
    Message,
    Record,
    SessionReset,
    ToolSpec,
    TurnFailed,
    check_text,
    scrub_obj,
    scrub_text,
)
from memtray.core.log.store import Entry, Store
from memtray.core.log.usage import as_usage
from memtray.core.memory import factdiff, scopes, timing

if TYPE_CHECKING:
    from memtray.core.search.service import Recall

log = logging.getLogger(__name__)

MAX_INPUT_CHARS = 1_000_000


class InputTooLarge(MemtrayError):
    hint = "Send a shorter message, or attach the text as a file in a later version."


class NoVision(MemtrayError):
    hint = "Remove the image, or choose a model that reads images (e.g. openai/gpt-4o) in Settings."


def supports_vision(model: str) -> bool:
    """Whether litellm knows ``model`` to take image parts (unknown models: no)."""
    if localmodel.is_local(model):  # the offline models read text only (and run without litellm)
        return False
    import litellm  # already loaded by the client when a turn runs

    try:
        return bool(litellm.supports_vision(model=model))
    except Exception:  # litellm raises for models it has no entry for
        return False


def content_chars(content: Any) -> int:
    """Characters of text in a message's content (a string or a list of parts)."""
    if isinstance(content, list):
        return sum(len(p.get("text") or "") for p in content if isinstance(p, dict))
    return len(content or "")


def clean_text(text: str) -> str:
    """Make user input storable: undecodable bytes become U+FFFD, NULs are dropped."""
    return scrub_text(text)


def request_hash(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    body = json.dumps({"model": model, "messages": messages, "tools": tools or []}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


def context_event(pctx: PromptContext, digest: str) -> ContextChanged:
    """The ``context.changed`` payload; secrets in bootstrap files or skills are redacted."""
    bootstrap = [[redact(name), redact(text)] for name, text in pctx.bootstrap]
    skills = [[redact(s.name), redact(s.summary)] for s in pctx.skills]
    redacted = bootstrap != [list(b) for b in pctx.bootstrap] or skills != [[s.name, s.summary] for s in pctx.skills]
    return ContextChanged(
        digest=digest, model=pctx.model, tools=cast(list[ToolSpec], pctx.tools), identity=pctx.identity,
        bootstrap=bootstrap, skills=skills, format=PROMPT_FORMAT, redacted=redacted,
    )


@dataclass
class TurnResult:
    reply: str
    records: list[Record] = field(default_factory=list)
    tool_rounds: int = 0
    model: str = ""


class Agent:
    def __init__(
        self,
        store: Store,
        llm: LLMClient,
        config: Config,
        *,
        clock: Clock | None = None,
        tools: ToolRegistry | None = None,
    ) -> None:
        self.store = store
        self.llm = llm
        self.config = config
        self.clock = clock or Clock()
        self.tools = tools if tools is not None else ToolRegistry()
        self.attachments = AttachmentStore(store.home.root)
        self._locks: dict[str, asyncio.Lock] = {}
        #: called with (session, state) after a turn appended messages (consolidation trigger)
        self.after_turn: list[Callable[[str], None]] = []
        #: called before each turn (on the worker): the App refreshes its settings here
        self.before_turn: list[Callable[[], object]] = []
        #: characters of content in the last request sent per session (the budget trigger reads it
        #: instead of building the whole prompt a second time after every turn)
        self.last_request_chars: dict[str, int] = {}
        #: (session, text, zone, limit) -> past snippets for a turn (search.service.Recall) or None;
        #: set by the search service, used when the ``recall`` setting is on
        self.recall: Callable[[str, str, str, int], Awaitable[Recall | None]] | None = None

    # --- prompt ---------------------------------------------------------------------

    def prompt_context(self, model: str, tools: list[dict[str, Any]] | None) -> PromptContext:
        root: Path = self.store.home.root
        return PromptContext(model, tools or [], identity_text(), load_bootstrap(root), load_skills(root / "skills"))

    def zone(self) -> str:
        return self.config.timezone or self.clock.local_zone_name()

    def request_chars(self, session: str) -> int | None:
        """Characters of content in the last request sent for ``session`` (plus its reply),
        or None before the first turn in this process."""
        return self.last_request_chars.get(session)

    def messages_for(self, session: str) -> list[dict[str, Any]]:
        pctx = self.prompt_context(self.model_for(session), self.tools.specs() if self.tools else None)
        return prompt_messages(self.store.state, session, pctx, self.attachments.load, format=PROMPT_FORMAT)

    # --- the turn -------------------------------------------------------------------

    def _lock(self, session: str) -> asyncio.Lock:
        lock = self._locks.get(session)
        if lock is None:
            lock = self._locks[session] = asyncio.Lock()
        return lock

    def log_user(
        self, session: str, text: str, recall: Recall | None = None, attachments: Sequence[Prepared] = ()
    ) -> Record:
        check_text(session, "the session name")  # typed by the user: said before anything else
        text = clean_text(text)
        if len(text) > MAX_INPUT_CHARS:
            raise InputTooLarge(f"the message is {len(text):,} characters; the limit is {MAX_INPUT_CHARS:,}")
        rebase = self._rebase_due(session)
        ctx = self.runtime_line(session, rebase=rebase)
        refs = [self.attachments.put(a).to_data() for a in attachments] or None
        msg = Message(role="user", content=redact(text), context=ctx,
                      recall=recall.text if recall else None, recalled=recall.seqs if recall else None,
                      attachments=refs, rebase=rebase or None)
        return self.store.append(msg, session=session)

    def runtime_line(self, session: str | None = None, *, rebase: bool = True) -> str:
        """What goes before the user's words: the local date and time, and what memory's
        facts with a time are on that day (upcoming, current, past: core/memory/timing.py).
        The latter only when the prompt does not say it already: a session's request keeps
        its earlier user messages, so the block comes again only when it changed (or the
        prompt starts over, ``rebase``), and once as "none" when no fact has a time any more."""
        now = self.clock.now()
        line = runtime_context(now, self.zone())
        today = now.astimezone(zone_of(self.zone())).date()
        # only what this conversation's prompt shows: the global facts and its scope's
        sess = self.store.state.sessions.get(session) if session is not None else None
        memory = scopes.view(self.store.state.memory, sess.scope if sess is not None else None)
        dated = timing.note([f.text for f in factdiff.parse(memory)], today)
        shown = self._dated_shown(session, rebase) if session is not None else None
        if dated and not rebase and shown == timing.note_lines(dated):
            dated = ""
        elif not dated and shown:  # the prompt still shows times that no longer hold
            dated = timing.note_none(today)
        return f"{line}\n{dated}" if dated else line

    def _dated_shown(self, session: str, rebase: bool) -> list[str] | None:
        """The lines of the last dated-facts block ``session``'s next request shows (its
        history from the re-base, or from the pointer when this turn re-bases), or None."""
        s = self.store.state.sessions.get(session)
        start = None if s is None else s.last_consolidated if rebase or s.prompt_base is None else s.prompt_base
        if s is None or start is None:
            return None
        for m in reversed(s.slice(start, s.count)):
            ctx = m.get("context") if m.get("role") == "user" else None
            if isinstance(ctx, str) and timing.is_note(ctx):
                return timing.note_lines(ctx)
        return None

    def _rebase_due(self, session: str) -> bool:
        """Whether this turn starts the session's prompt over (core/agent/layout.py)."""
        chars = self.last_request_chars.get(session)
        cfg = self.config
        return rebase_due(self.store.state, session, self.clock.now(), window=cfg.memory_window,
                          memory_budget=cfg.memory_budget, request_tokens=None if chars is None else chars / 4,
                          context_tokens=lambda: cfg.context_tokens or context_window(self.model_for(session)))

    async def turn(
        self,
        session: str,
        text: str,
        *,
        on_delta: DeltaCallback | None = None,
        stream: bool = True,
        tool_ctx: ToolContext | None = None,
        attachments: Sequence[Prepared] = (),
    ) -> TurnResult:
        """One user turn. Raises LLMError after logging ``turn.failed``; NoVision (nothing
        logged) when an image is attached for a model that cannot read images."""
        session = redact(session)  # a token pasted as a session name is a secret too
        for fn in self.before_turn:
            fn()
        images = [a.ref.name for a in attachments if a.ref.kind == "image"]
        model = self.model_for(session)
        if images and not self.reads_images(model):
            raise NoVision(f"the model {model} cannot read images ({', '.join(images)})")
        async with self._lock(session):
            recall = await self._recall(session, text)
            user = self.log_user(session, text, recall, attachments)
            return await self._run(session, [user], on_delta, stream, tool_ctx)

    def model_for(self, session: str) -> str:
        """The model ``session``'s turns go to: the one chosen for it (``session.model``),
        else the configured one (else the offline one)."""
        return chats.model_of(self.store.state, session) or self.llm.model

    def reads_images(self, model: str) -> bool:
        """Whether ``model`` takes images: the user's word (setting ``vision_models``) first,
        else litellm's list."""
        if localmodel.is_local(model):  # the offline models read text only, whatever is said
            return False
        return model in self.config.vision_model_list or supports_vision(model)

    async def _recall(self, session: str, text: str) -> Recall | None:
        """Past snippets for this turn when ``recall`` is on; never fails the turn."""
        if not self.config.recall or self.recall is None or len(text) > MAX_INPUT_CHARS:
            return None
        try:
            return await self.recall(session, redact(clean_text(text)), self.zone(), self.config.recall_limit)
        except Exception:  # recall is a help, not a step a turn depends on
            log.exception("recall failed; the turn goes on without it")
            return None

    async def retry(self, session: str, *, on_delta: DeltaCallback | None = None, stream: bool = True) -> TurnResult:
        """Answer the last user message again (after a failure or a stop)."""
        for fn in self.before_turn:
            fn()
        async with self._lock(session):
            return await self._run(session, [], on_delta, stream, None)

    async def _run(
        self,
        session: str,
        records: list[Record],
        on_delta: DeltaCallback | None,
        stream: bool,
        tool_ctx: ToolContext | None,
    ) -> TurnResult:
        ctx = tool_ctx or ToolContext(session=session)
        tools = self.tools.specs() if self.tools else None
        chosen = chats.model_of(self.store.state, session)
        model = chosen or self.llm.model  # this conversation's, else the configured one, else the offline one
        rounds = 0
        partial: list[str] = []

        def delta(t: str) -> None:
            partial.append(t)
            if on_delta is not None:
                on_delta(t)

        try:
            while True:
                pctx = self.prompt_context(model, tools)
                messages = prompt_messages(self.store.state, session, pctx, self.attachments.load,
                                           format=PROMPT_FORMAT)
                basis = self.store.state.last_seq
                self.last_request_chars[session] = sum(content_chars(m.get("content")) for m in messages)
                rhash = request_hash(model, messages, tools)
                partial.clear()
                try:
                    result = await self.llm.complete(
                        Request(messages=messages, tools=tools, stream=stream, model=chosen), delta if stream else None
                    )
                except LLMError as exc:
                    records.append(
                        self.store.append(
                            TurnFailed(error=redact(str(exc)), kind=type(exc).__name__, model=model),
                            session=session,
                        )
                    )
                    raise
                content = redact(scrub_text(result.content or ""))  # a model's reply is kept, made storable
                if result.tool_calls and rounds < self.config.max_tool_iterations:
                    rounds += 1
                    calls = [redact_obj(scrub_obj(tc.to_message())) for tc in result.tool_calls]
                    records.append(
                        self._append_assistant(session, Message(
                            role="assistant", content=content or None, tool_calls=calls,
                            model=scrub_obj(result.model), usage=as_usage(result.usage),
                            request_hash=rhash, basis_seq=basis, recalled=self._recalled(session),
                        ), pctx)
                    )
                    for tc in result.tool_calls:
                        out = await self.tools.call(tc.name, tc.arguments, ctx)
                        records.append(
                            self._append_msg(session, Message(
                                role="tool", content=redact(scrub_text(out)), tool_call_id=scrub_text(tc.id),
                                name=scrub_text(tc.name),
                            ))
                        )
                    continue
                stop = None
                if result.tool_calls:
                    stop = "tool-limit"
                    content = content or (
                        f"(stopped after {self.config.max_tool_iterations} rounds of tool calls without an answer)"
                    )
                records.append(
                    self._append_assistant(session, Message(
                        role="assistant", content=content, model=scrub_obj(result.model),
                        usage=as_usage(result.usage), request_hash=rhash, stop=stop, basis_seq=basis,
                        recalled=self._recalled(session),
                    ), pctx)
                )
                self.last_request_chars[session] += len(content)  # the reply is in the next prompt
                for fn in self.after_turn:
                    fn(session)
                return TurnResult(content, records, rounds, result.model)
        except asyncio.CancelledError:
            text = redact("".join(partial))
            if text:
                records.append(self._append_msg(session, Message(role="assistant", content=text, stop="cancelled")))
            raise

    def _recalled(self, session: str) -> list[int] | None:
        """The seqs recalled for the turn being answered (on its user message)."""
        for m in reversed(self.store.state.session(session).messages):
            if m.get("role") == "user":
                return list(m["recalled"]) if m.get("recalled") else None
        return None

    def _append_msg(self, session: str, msg: Message) -> Record:
        return self.store.append(msg, session=session)

    def _append_assistant(self, session: str, msg: Message, pctx: PromptContext) -> Record:
        """The assistant message, preceded (in the same write) by a ``context.changed`` when the
        request's context differs from the last one recorded, so ``memtray prompt at`` can
        rebuild the request exactly (docs/AUDIT.md)."""
        items: list[Entry] = []
        digest = pctx.digest()
        if digest != self.store.state.context_digest:
            items.append((context_event(pctx, digest), None, None))
        items.append((msg, session, None))
        return self.store.append_many(items)[-1]

    def new_session(self, session: str, reason: str = "user") -> Record:
        return self.store.append(SessionReset(reason=reason), session=session)
