"""Tests for memtray.core.base.redact: secrets never survive, ordinary text is untouched."""

from __future__ import annotations

import io
import itertools
import logging
import sys
from collections import Counter
from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memtray.core.base import redact as redact_module
from memtray.core.base.logsetup import RedactingFilter
from memtray.core.base.redact import (
    KINDS,
    Secret,
    find_secrets,
    is_secret_name,
    marker,
    redact,
    redact_obj,
)

from tests.unit.base.redaction_corpus import CORPUS, NEGATIVES

_ids = [f"{kind}-{n}" for n, (kind, _, _) in enumerate(CORPUS)]


# --- the corpus --------------------------------------------------------------------------


def test_corpus_covers_every_kind_several_times() -> None:
    counts = Counter(kind for kind, _, _ in CORPUS)
    assert set(counts) == set(KINDS)
    assert min(counts.values()) >= 3
    for _, sample, secret in CORPUS:
        assert secret in sample


@pytest.mark.parametrize(("kind", "sample", "secret"), CORPUS, ids=_ids)
def test_secret_never_survives(kind: str, sample: str, secret: str) -> None:
    out = redact(sample)
    assert secret not in out
    assert marker(kind) in out
    assert kind in {s.kind for s in find_secrets(sample)}


@pytest.mark.parametrize(("kind", "sample", "secret"), CORPUS, ids=_ids)
def test_redaction_is_idempotent_on_corpus(kind: str, sample: str, secret: str) -> None:
    once = redact(sample)
    assert redact(once) == once
    assert find_secrets(once) == []


@pytest.mark.parametrize("text", NEGATIVES)
def test_negatives_are_untouched(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == text


# --- what is kept around a secret --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "postgres://admin:hunter2!x@db.internal:5432/app",
            "postgres://admin:[REDACTED:url-password]@db.internal:5432/app",
        ),
        ("redis://:pw12345@cache:6379", "redis://:[REDACTED:url-password]@cache:6379"),
        ("PASSWORD=hunter2", "PASSWORD=[REDACTED:password]"),
        ("export DB_PASS='a b c'", "export DB_PASS='[REDACTED:password]'"),
        ('"api_key": "abc123",', '"api_key": "[REDACTED:secret]",'),
        ("MY_TOKEN=abc123; next", "MY_TOKEN=[REDACTED:secret]; next"),
        ("password: hunter2 and more", "password: [REDACTED:password] and more"),
        ("Authorization: Bearer abcdef123456", "Authorization: Bearer [REDACTED:bearer-token]"),
        ("tool --token abc123 --verbose", "tool --token [REDACTED:secret] --verbose"),
        ("tool --token --verbose", "tool --token --verbose"),
        (
            "https://hooks.slack.com/services/T0/B0/abcdefghijkl",
            "https://hooks.slack.com/services/[REDACTED:slack-webhook]",
        ),
        (
            "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\nok",
            "[REDACTED:private-key]\nok",
        ),
        ("a sk-abc123def456ghi789jkl012 b", "a [REDACTED:openai-key] b"),
    ],
)
def test_redaction_keeps_labels_users_and_hosts(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_overlapping_matches_merge_under_the_most_specific_kind() -> None:
    key = "sk-ant-api03-" + "a1" * 20
    (secret,) = find_secrets(f"ANTHROPIC_API_KEY={key}")
    assert secret == Secret(
        "anthropic-key", len("ANTHROPIC_API_KEY="), len("ANTHROPIC_API_KEY=") + len(key)
    )


def test_find_secrets_positions() -> None:
    text = "a AKIAABCDEFGHIJKLMNOP b PASSWORD=x1 c"
    assert find_secrets(text) == [
        Secret("aws-access-key-id", 2, 22),
        Secret("password", text.index("x1"), text.index("x1") + 2),
    ]
    assert [text[s.start : s.end] for s in find_secrets(text)] == ["AKIAABCDEFGHIJKLMNOP", "x1"]


def test_secret_joined_to_a_marker_is_found_in_the_same_call() -> None:
    # The key block becomes a marker that runs into "sk-", which the
    # Authorization value then reaches; redact() settles it in one call.
    text = "Authorization: -----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----sk-"
    out = redact(text)
    assert out == "Authorization: [REDACTED:private-key][REDACTED:authorization]"
    assert [s.kind for s in find_secrets(text)] == ["private-key", "authorization"]
    assert find_secrets(out) == []


def test_request_label_does_not_hide_the_next_label() -> None:
    assert redact("request = smtp_pass = hunter2x") == "request = smtp_pass = [REDACTED:password]"


def test_markers_inside_values_are_not_redacted_again() -> None:
    text = "KEY=[REDACTED:secret]abc x://u:[REDACTED:url-password]@h"
    assert redact(text) == "KEY=[REDACTED:secret][REDACTED:secret] x://u:[REDACTED:url-password]@h"
    assert redact(redact(text)) == redact(text)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("api_key", True),
        ("apiKey", True),
        ("OPENAI_API_KEY", True),
        ("dbPassword", True),
        ("client-secret", True),
        ("GITHUB_TOKEN", True),
        ("password", True),
        ("secret", True),
        ("key", False),
        ("token", False),
        ("monkey", False),
        ("max_tokens", False),
        ("key_id", False),
        ("keyboard", False),
        ("", False),
    ],
)
def test_is_secret_name(name: str, expected: bool) -> None:
    assert is_secret_name(name) is expected


# --- hypothesis --------------------------------------------------------------------------

_noise = st.sampled_from(
    ["", " ", "\n", "hello", "User likes tea.", "=", ":", "@", "'", '"', "key", "x=1", "\r\n"]
)
_separators = st.sampled_from([" ", "\n", ", ", "; ", " | ", "\n\n"])


@given(st.lists(st.tuples(st.sampled_from(CORPUS), _noise, _separators), min_size=1, max_size=6))
def test_prop_secrets_never_survive_in_mixed_text(
    parts: list[tuple[tuple[str, str, str], str, str]],
) -> None:
    text = "".join(f"{noise}{sep}{sample}{sep}" for (_, sample, _), noise, sep in parts)
    out = redact(text)
    for (_, _, secret), _, _ in parts:
        assert secret not in out
    assert redact(out) == out


@given(st.text())
def test_prop_redact_arbitrary_text(text: str) -> None:
    secrets = find_secrets(text)
    for s in secrets:
        assert s.kind in KINDS
        assert 0 <= s.start < s.end <= len(text)
    for a, b in itertools.pairwise(secrets):
        assert a.end <= b.start
    out = redact(text)
    assert redact(out) == out
    if not secrets:
        assert out == text


_fragments = st.sampled_from(
    [
        "sk-",
        "sk-ant-",
        "proj-",
        "AKIA",
        "ghp_",
        "xoxb-",
        "AIza",
        "eyJ",
        ".",
        "=",
        ":",
        "@",
        "://",
        "Bearer ",
        "Authorization: ",
        "PASSWORD",
        "_KEY",
        "api_key",
        "'",
        '"',
        "\\",
        " ",
        "\n",
        "-",
        "--token ",
        "-----BEGIN PRIVATE KEY-----",
        "-----END PRIVATE KEY-----",
        "[REDACTED:secret]",
        "abc123",
        "A1b2C3d4E5f6G7h8I9j0",
        "0" * 16,
        "hooks.slack.com/services/",
    ]
)


@given(st.lists(_fragments, max_size=30).map("".join))
def test_prop_redaction_is_idempotent_on_secret_like_text(text: str) -> None:
    out = redact(text)
    assert redact(out) == out
    assert find_secrets(out) == []


@given(st.one_of(st.text(), st.lists(_fragments, max_size=30).map("".join)))
def test_prop_triggers_only_skip_rules_that_cannot_match(text: str) -> None:
    # White-box: the substring pre-checks are an optimisation and must never
    # change what is found.
    assert redact_module._scan(text) == redact_module._scan(text, use_triggers=False)


@pytest.mark.parametrize("text", [sample for _, sample, _ in CORPUS] + NEGATIVES)
def test_triggers_do_not_change_corpus_results(text: str) -> None:
    assert redact_module._scan(text) == redact_module._scan(text, use_triggers=False)


@pytest.mark.parametrize(
    "text",
    [
        "sk-" * 100_000,
        "a." * 200_000 + "=",
        "a" * 500_000 + "=",
        "x://" * 100_000,
        "http://u:" + "p" * 300_000,
        "eyJ" + "a" * 300_000 + "." + "b" * 300_000,
        "-----BEGIN PRIVATE KEY-----" * 5_000,
        "Bearer " * 100_000,
        "AKIA" * 100_000,
        '"' * 300_000,
        "password=" * 100_000,
        "a=" * 200_000,
        "Authorization: " * 50_000,
        '--token "' * 100_000,
        "a://b:c@" * 50_000,
    ],
    ids=[
        "sk",
        "dots",
        "long-name",
        "schemes",
        "url",
        "jwt",
        "pem",
        "bearer",
        "akia",
        "quotes",
        "labels",
        "rejected-labels",
        "auth-headers",
        "flags",
        "urls",
    ],
)
def test_pathological_input_is_handled(text: str) -> None:
    out = redact(text)
    assert redact(out) == out


# --- redact_obj --------------------------------------------------------------------------


class Pair(NamedTuple):
    name: str
    value: str


def test_redact_obj_walks_containers() -> None:
    key = "sk-" + "abc123" * 5
    obj = {
        "messages": [{"role": "user", "content": f"my key is {key}"}],
        "meta": ("x", "PASSWORD=hunter2", 3, None, 2.5, True),
        "pair": Pair("n", key),
        "nested": {"deeper": [[key]]},
        key: "key as a dict key",
    }
    out = redact_obj(obj)
    assert key not in repr(out)
    assert "hunter2" not in repr(out)
    assert out["messages"][0]["content"] == "my key is [REDACTED:openai-key]"
    assert out["meta"] == ("x", "PASSWORD=[REDACTED:password]", 3, None, 2.5, True)
    assert out["pair"] == Pair("n", "[REDACTED:openai-key]")
    assert isinstance(out["pair"], Pair)
    assert out["[REDACTED:openai-key]"] == "key as a dict key"
    assert obj["nested"] == {"deeper": [[key]]}  # the input is not modified


def test_redact_obj_replaces_values_under_secret_names() -> None:
    out = redact_obj({"api_key": "plain-looking", "dbPassword": "x", "token": "t", "ok": "hi"})
    assert out == {
        "api_key": "[REDACTED:secret]",
        "dbPassword": "[REDACTED:password]",
        "token": "t",  # a bare "token" is too common a field name to be sure
        "ok": "hi",
    }
    assert redact_obj({"api_key": "", "password": 1234}) == {"api_key": "", "password": 1234}
    assert redact_obj(out) == out


def test_redact_obj_scalars_and_cycles() -> None:
    assert redact_obj("AKIAABCDEFGHIJKLMNOP") == "[REDACTED:aws-access-key-id]"
    assert redact_obj(42) == 42
    assert redact_obj(None) is None
    loop: list[object] = ["AKIAABCDEFGHIJKLMNOP"]
    loop.append(loop)
    out = redact_obj(loop)
    assert out[0] == "[REDACTED:aws-access-key-id]"
    assert out[1] is loop


# --- logging -----------------------------------------------------------------------------

KEY = "sk-" + "Zx9" * 10


@pytest.fixture
def captured() -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("memtray.test_redact")
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger, stream


def test_filter_redacts_message_and_args(captured: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = captured
    logger.info("calling with key %s and %r", KEY, {"password": "hunter2"})
    logger.warning(f"inline {KEY}")
    logger.info("dict args %(k)s", {"k": KEY})
    text = stream.getvalue()
    assert KEY not in text
    assert "hunter2" not in text
    assert text.count("[REDACTED:openai-key]") == 3
    assert (
        "INFO calling with key [REDACTED:openai-key] and {'password': '[REDACTED:password]'}"
        in text
    )


def test_filter_redacts_secret_split_between_format_and_args(
    captured: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = captured
    logger.info("PASSWORD=%s", "hunter2")
    assert stream.getvalue() == "INFO PASSWORD=[REDACTED:password]\n"


def test_filter_redacts_tracebacks_and_stacks(captured: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = captured
    try:
        raise RuntimeError(f"provider refused key {KEY}")
    except RuntimeError:
        logger.exception("call failed")
    logger.info("where %s", "here", stack_info=True)
    text = stream.getvalue()
    assert "RuntimeError: provider refused key [REDACTED:openai-key]" in text
    assert "Stack (most recent call last)" in text
    assert KEY not in text


def test_filter_on_record_with_bad_format_args() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "value %d " + KEY, (KEY,), None)
    assert RedactingFilter().filter(record)
    assert record.msg == "value %d [REDACTED:openai-key]"
    assert record.args == ("[REDACTED:openai-key]",)


def test_filter_is_idempotent_and_keeps_non_string_msg() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, {"api_key": "abc"}, None, None)
    f = RedactingFilter()
    assert f.filter(record) and f.filter(record)
    assert record.getMessage() == "{'api_key': '[REDACTED:secret]'}"


def test_filter_with_exc_info_tuple() -> None:
    try:
        raise ValueError(KEY)
    except ValueError:
        exc_info = sys.exc_info()
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "boom", None, exc_info)
    RedactingFilter().filter(record)
    assert record.exc_text is not None
    assert KEY not in record.exc_text
    assert KEY not in logging.Formatter().format(record)


def test_secret_named_environment_values_are_redacted_but_not_the_working_directory_or_a_path(
        monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    """``PWD`` reads like a password's short name; it is the working directory. A secret-named
    variable holding a file's path names the secret's file, not the secret."""
    from pathlib import Path

    home = Path(str(tmp_path)) / "projects-of-tester"
    home.mkdir()
    creds = home / "creds.json"
    creds.write_text("{}")
    monkeypatch.setenv("PWD", str(home))
    monkeypatch.setenv("OLDPWD", str(home / "old"))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(creds))
    monkeypatch.setenv("MY_SERVICE_TOKEN", "Zq8-not-a-known-shape-7Hw")
    text = f"my files are in {home}/x, the key file is {creds}, the token Zq8-not-a-known-shape-7Hw"
    out = redact(text)
    assert f"my files are in {home}/x" in out and str(creds) in out
    assert "Zq8-not-a-known-shape-7Hw" not in out
