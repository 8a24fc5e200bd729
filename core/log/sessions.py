"""Session views for the model: the unconsolidated history, cleaned for a request.

A session is derived state (:class:`~memtray.core.log.projections.SessionState`).
:func:`get_history` returns what is sent to the model: the unconsolidated tail,
starting at a user turn, with no orphaned tool call or tool result, and with
each user message rendered exactly as it was sent (runtime-context line
included) so consecutive prompts share an identical prefix. A user message's
attachments are rebuilt from their references (``load`` reads the store): a file's
text follows the message, an image becomes an ``image_url`` content part.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Sequence
from typing import Any

from memtray import resources
from memtray.core.log.attachments import AttachmentMissing, refs_of
from memtray.core.log.projections import SessionState

log = logging.getLogger(__name__)

#: sha256 -> the stored bytes of an attachment (AttachmentStore.load)
Loader = Callable[[str], bytes]


def render(msg: dict[str, Any], *, recall: bool = False, load: Loader | None = None) -> dict[str, Any]:
    """A stored message as the provider sees it; ``recall``: with the past snippets it was
    sent with (only the newest user message carries them, so they stay late in the request
    and the snippets of earlier turns are not sent again); ``load``: reads attachments."""
    role = msg["role"]
    out: dict[str, Any] = {"role": role}
    content = msg.get("content")
    if role == "user" and recall and msg.get("recall"):
        content = f"{msg['recall']}\n\n{content or ''}"
    if role == "user" and msg.get("context"):
        content = f"{msg['context']}\n\n{content or ''}"
    out["content"] = content if content is not None else ""
    if role == "user" and msg.get("attachments"):
        out["content"] = with_attachments(out["content"], msg, load)
    if role == "assistant" and msg.get("tool_calls"):
        out["tool_calls"] = msg["tool_calls"]
        if not content:
            out["content"] = None
    if role == "tool":
        out["tool_call_id"] = msg.get("tool_call_id", "")
        if msg.get("name"):
            out["name"] = msg["name"]
    return out


def with_attachments(text: str, msg: dict[str, Any], load: Loader | None) -> str | list[dict[str, Any]]:
    """``text`` with the message's attachments: files' text appended, images as parts."""
    images: list[dict[str, Any]] = []
    for ref in refs_of(msg):
        try:
            if load is None:
                raise AttachmentMissing("no attachment store")
            data = load(ref.sha256)
        except AttachmentMissing as exc:
            log.warning("attachment %s of a message is not sent: %s", ref.sha256[:12], exc)
            text += f"\n\n[attachment {ref.name} is missing]"
            continue
        if ref.kind == "image":
            url = f"data:{ref.mime};base64,{base64.b64encode(data).decode('ascii')}"
            images.append({"type": "image_url", "image_url": {"url": url}})
        else:
            text += f"\n\n[attached file: {ref.name}]\n{data.decode('utf-8', 'replace')}"
    if not images:
        return text
    return [{"type": "text", "text": text}, *images]


def clean(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Start at a user turn; drop tool results without their call and calls without results."""
    start = next((i for i, m in enumerate(messages) if m["role"] == "user"), len(messages))
    msgs = messages[start:]
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(msgs):
        m = msgs[i]
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = [tc.get("id") for tc in m["tool_calls"]]
            j = i + 1
            results = []
            while j < len(msgs) and msgs[j]["role"] == "tool":
                results.append(msgs[j])
                j += 1
            answered = {r.get("tool_call_id") for r in results}
            if all(cid in answered for cid in ids):
                out.append(m)
                out.extend(r for r in results if r.get("tool_call_id") in set(ids))
            else:
                # an interrupted tool round: keep any text, drop the unanswered calls
                if m.get("content"):
                    out.append({k: v for k, v in m.items() if k != "tool_calls"})
            i = j
            continue
        if m["role"] == "tool":
            i += 1  # orphaned result
            continue
        out.append(m)
        i += 1
    return out


def get_history(
    session: SessionState, max_messages: int | None = None, load: Loader | None = None, *,
    start: int | None = None, notes: Sequence[Sequence[Any]] = (),
) -> list[dict[str, Any]]:
    """Unconsolidated messages (from ``start``, an absolute index, when given: prompt layout
    3's history start), ready to send (see module doc). ``notes``: ``[seq, text]`` of memory
    changes (core/log/promptbase.py), each shown before the first user message after it."""
    msgs = session.slice(session.last_consolidated if start is None else start, session.count)
    if max_messages is not None and len(msgs) > max_messages:
        msgs = msgs[-max_messages:]
    out = clean(msgs)
    last_user = max((i for i, m in enumerate(out) if m["role"] == "user"), default=-1)
    rendered = [render(m, recall=i == last_user, load=load) for i, m in enumerate(out)]
    after = -1  # notes after this seq are not shown yet
    for m, r in zip(out, rendered, strict=True):
        if m["role"] != "user" or "seq" not in m:
            continue
        told = [str(text) for seq, text in notes if after < int(seq) <= m["seq"]]
        after = m["seq"]
        if told:
            note = memory_note(told)
            r["content"] = (f"{note}\n\n{r['content']}" if isinstance(r["content"], str)
                            else [{"type": "text", "text": note}, *r["content"]])
    return rendered


def memory_note(changes: Sequence[str]) -> str:
    """Memory changes as a user message shows them: quoted data, as memory itself is."""
    quoted = "\n".join(f"> {line}".rstrip() for text in changes for line in text.strip().split("\n"))
    return resources.text("prompts/memory_note.txt").strip().replace("{changes}", quoted)
