"""Tests for memtray.core.memory.factdiff: parsing, editing and diffing MEMORY.md facts."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from memtray.core.base.errors import MemtrayError
from memtray.core.memory.factdiff import (
    DEFAULT_SECTION,
    Fact,
    FactDiff,
    FactError,
    FactNotFound,
    add_fact,
    diff,
    diff_facts,
    find_fact,
    match_fact,
    normalize,
    parse,
    remove_fact,
    similarity,
)

MEMORY = """\
# Memory

Facts before any section.

## Profile
- User lives in Berlin.
- User's name is **Sam**
  and they go by Sammy.
* Works as a data engineer at Acme

A plain paragraph fact
spanning two lines.

## Preferences
- User likes tea
- Prefers dark mode
  - Nested: uses the Solarized theme
<!-- a comment, not a fact -->
---
"""


def texts(md: str) -> list[str]:
    return [f.text for f in parse(md)]


def norms(md: str) -> list[str]:
    return [f.norm for f in parse(md)]


# --- normalize ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("User lives in Berlin.", "user lives in berlin"),
        ("  User   LIVES\tin\nBerlin!!  ", "user lives in berlin"),
        ("User's name is **Sam**", "user's name is sam"),
        ("_Likes_ `vim` and ~~emacs~~", "likes vim and emacs"),
        ("Uses snake_case names", "uses snake_case names"),
        ("Ends with an ellipsis…", "ends with an ellipsis"),
        ("User’s “quote”", 'user\'s "quote"'),
        ("Escaped \\*star\\*", "escaped star"),
        ("Straße", "strasse"),
        ("ﬁne", "fine"),
        ("**", ""),
        ("", ""),
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


# --- parse -------------------------------------------------------------------------------


def test_parse_sections_bullets_paragraphs_and_continuations() -> None:
    facts = parse(MEMORY)
    assert [(f.section, f.text) for f in facts] == [
        ("Memory", "Facts before any section."),
        ("Profile", "User lives in Berlin."),
        ("Profile", "User's name is **Sam** and they go by Sammy."),
        ("Profile", "Works as a data engineer at Acme"),
        ("Profile", "A plain paragraph fact spanning two lines."),
        ("Preferences", "User likes tea"),
        ("Preferences", "Prefers dark mode"),
        ("Preferences", "Nested: uses the Solarized theme"),
    ]


def test_fact_id_is_sha1_prefix_of_norm() -> None:
    fact = parse("- User lives in Berlin.")[0]
    assert fact.norm == "user lives in berlin"
    assert fact.id == hashlib.sha1(b"user lives in berlin").hexdigest()[:8]


def test_same_fact_has_same_id_in_every_revision_and_section() -> None:
    a = parse("## Home\n- User lives in **Berlin**.\n")[0]
    b = parse("# Other\n\nsome text\n\n## Places\n* user lives in Berlin\n")[-1]
    assert a.id == b.id
    assert a.section != b.section


def test_repeated_fact_ids_are_suffixed_in_order() -> None:
    facts = parse("## A\n- Likes tea\n## B\n- likes tea.\n- Likes **tea**\n")
    base = facts[0].id
    assert [f.id for f in facts] == [base, f"{base}-2", f"{base}-3"]
    assert len(base) == 8


def test_text_before_any_heading_has_empty_section() -> None:
    assert [(f.section, f.text) for f in parse("- loose fact\n# Title\n- titled")] == [
        ("", "loose fact"),
        ("Title", "titled"),
    ]


def test_headings_all_levels_and_closing_hashes() -> None:
    md = "### Deep ###\n- a\n###### Six\n- b\n#NotAHeading\n####### Seven\n"
    facts = parse(md)
    assert [(f.section, f.text) for f in facts] == [
        ("Deep", "a"),
        ("Six", "b #NotAHeading ####### Seven"),
    ]


def test_plus_and_numbered_bullets() -> None:
    assert texts("+ plus\n1. first\n2) second\n") == ["plus", "first", "second"]


def test_lazy_continuation_and_wrapped_bullet() -> None:
    md = "- a bullet that\n  wraps\nlazily too\n- next\n"
    assert texts(md) == ["a bullet that wraps lazily too", "next"]


def test_blank_line_ends_a_bullet() -> None:
    assert texts("- one\n\n  indented after blank\n") == ["one", "indented after blank"]


def test_empty_bullets_thematic_breaks_and_comments_are_not_facts() -> None:
    md = "- \n-\n* * *\n___\n<!-- one line -->\n<!--\n- inside\n-->\n- real\n"
    assert texts(md) == ["real"]


def test_fenced_code_is_one_fact_and_hides_markup() -> None:
    md = "## S\n```sh\n# not a heading\n- not a bullet\n```\n- after\n"
    facts = parse(md)
    assert [f.text for f in facts] == ["```sh\n# not a heading\n- not a bullet\n```", "after"]
    assert {f.section for f in facts} == {"S"}


def test_unclosed_fence_and_comment_are_plain_text() -> None:
    assert texts("```py\n# Heading\n- bullet\n") == ["```py", "bullet"]
    assert texts("<!-- open\n- bullet\n") == ["<!-- open", "bullet"]


def test_crlf_and_bare_cr_lines() -> None:
    md = "## Work\r\n- Writes Go\r\n  at Acme\r\n- Second\r\n"
    assert [(f.section, f.text) for f in parse(md)] == [
        ("Work", "Writes Go at Acme"),
        ("Work", "Second"),
    ]
    assert parse(md) == parse(md.replace("\r\n", "\n"))


def test_only_newline_ends_lines() -> None:
    # \x0b, \x1c and \u2028 are line breaks to str.splitlines(), not to markdown.
    # They are whitespace, so they fold into single spaces like any other.
    assert texts("- a\x0bb\u2028c\x1cd\n- e") == ["a b c d", "e"]


def test_parse_empty_and_whitespace() -> None:
    assert parse("") == []
    assert parse("\n\n  \r\n\t") == []


@given(st.text())
def test_parse_never_raises_on_arbitrary_text(text: str) -> None:
    facts = parse(text)
    assert all(f.norm and f.norm == normalize(f.text) for f in facts)
    assert len({f.id for f in facts}) == len(facts)


@given(st.text(alphabet=st.sampled_from("\x00\r\n\t -*+#`~<!>_1.) aZé\u2028"), max_size=400))
def test_parse_never_raises_on_markdown_noise(text: str) -> None:
    parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "x" * 1_000_000,
        "- " + "word " * 200_000,
        "a" + "*" * 200_000 + "b",
        "_" * 200_000,
        "\x00" * 100_000,
        "\r\n" * 100_000,
        # Many fences/comments that never close: linear scanning keeps these fast.
        "````a\n```\n" * 20_000,
        "```a\n" * 40_000,
        "<!--\n" * 40_000,
        "- a\n" + "  cont\n" * 50_000,
    ],
    ids=[
        "long-line",
        "long-bullet",
        "stars",
        "underscores",
        "nul",
        "crlf",
        "fences",
        "open-fences",
        "open-comments",
        "continuations",
    ],
)
def test_parse_handles_huge_and_pathological_input(text: str) -> None:
    facts = parse(text)
    assert all(f.norm for f in facts)


# --- add_fact ----------------------------------------------------------------------------


def test_add_fact_appends_to_existing_section() -> None:
    out = add_fact(MEMORY, "User drinks coffee in the morning", "Preferences")
    assert "  - Nested: uses the Solarized theme\n- User drinks coffee in the morning\n<!--" in out
    d = diff(MEMORY, out)
    assert [(f.section, f.text) for f in d.added] == [
        ("Preferences", "User drinks coffee in the morning")
    ]
    assert d.counts == (1, 0, 0)


def test_add_fact_matches_section_loosely_and_reuses_marker() -> None:
    md = "## Profile\n* one\n* two\n\n## Other\n- x\n"
    out = add_fact(md, "three", "  **profile** ")
    assert out == "## Profile\n* one\n* two\n* three\n\n## Other\n- x\n"


def test_add_fact_creates_missing_section_at_end() -> None:
    assert add_fact(MEMORY, "Plays chess", "Hobbies").endswith("---\n\n## Hobbies\n- Plays chess\n")
    assert add_fact("", "Plays chess") == f"## {DEFAULT_SECTION}\n- Plays chess\n"
    assert add_fact("- loose", "x", "New") == "- loose\n\n## New\n- x\n"
    assert add_fact("- loose\n\n", "x", "New") == "- loose\n\n## New\n- x\n"


def test_add_fact_default_section_is_general() -> None:
    md = "## General\n- a\n## Work\n- b\n"
    assert add_fact(md, "c") == "## General\n- a\n- c\n## Work\n- b\n"
    assert add_fact(md, "d", "   ") == "## General\n- a\n- d\n## Work\n- b\n"


def test_add_fact_into_empty_section_goes_under_heading() -> None:
    assert add_fact("## Empty\n\n## Next\n- n\n", "e", "Empty") == "## Empty\n- e\n\n## Next\n- n\n"


def test_add_fact_skips_duplicates_anywhere() -> None:
    assert add_fact(MEMORY, "user likes **tea**.", "Preferences") == MEMORY
    assert add_fact(MEMORY, "User likes tea", "Somewhere else") == MEMORY


def test_add_fact_folds_lines_and_drops_leading_marker() -> None:
    out = add_fact("## S\n", "- a fact\n  over two lines", "S")
    assert out == "## S\n- a fact over two lines\n"


def test_add_fact_keeps_crlf_and_missing_final_newline() -> None:
    assert add_fact("## S\r\n- a\r\n", "b", "S") == "## S\r\n- a\r\n- b\r\n"
    assert add_fact("## S\n- a", "b", "S") == "## S\n- a\n- b"
    assert add_fact("## S\r\n- a", "b", "T") == "## S\r\n- a\r\n\r\n## T\r\n- b\r\n"


def test_add_fact_escapes_what_would_not_read_back() -> None:
    out = add_fact("", "--")
    assert [f.norm for f in parse(out)] == ["--"]
    out = add_fact("<!-- never closed\n", "a --> b", "S -->")
    assert [(f.section, f.norm) for f in parse(out)] == [
        ("", "<!-- never closed"),
        ("S --\\>", "a --> b"),
    ]
    assert add_fact(out, "c", "S -->").endswith("- c\n")


@pytest.mark.parametrize("empty", ["", "   ", "- ", "**", "...", "\n\t"])
def test_add_fact_rejects_empty_fact(empty: str) -> None:
    with pytest.raises(FactError):
        add_fact(MEMORY, empty)
    assert issubclass(FactError, MemtrayError)


# --- remove_fact -------------------------------------------------------------------------


def test_remove_fact_by_text_removes_continuation_lines() -> None:
    out = remove_fact(MEMORY, "User's name is Sam and they go by Sammy")
    assert "Sam" not in out
    assert "  and they go by Sammy." not in out
    d = diff(MEMORY, out)
    assert [f.text for f in d.dropped] == ["User's name is **Sam** and they go by Sammy."]
    assert d.counts == (0, 1, 0)


def test_remove_fact_by_fact_id_and_prefix() -> None:
    facts = parse(MEMORY)
    tea = next(f for f in facts if f.text == "User likes tea")
    assert "- User likes tea\n" not in remove_fact(MEMORY, tea)
    assert remove_fact(MEMORY, tea.id) == remove_fact(MEMORY, tea)
    assert remove_fact(MEMORY, tea.id[:5].upper()) == remove_fact(MEMORY, tea)


def test_remove_fact_with_stale_fact_falls_back_to_norm() -> None:
    stale = Fact(id="00000000", section="X", text="User likes tea", norm="user likes tea")
    assert "User likes tea" not in remove_fact(MEMORY, stale)


def test_remove_fact_keeps_nested_bullets() -> None:
    out = remove_fact(MEMORY, "Prefers dark mode")
    assert "  - Nested: uses the Solarized theme\n" in out
    assert diff(MEMORY, out).counts == (0, 1, 0)


def test_remove_fact_collapses_blank_lines() -> None:
    assert remove_fact("a\n\nb\n\nc\n", "b") == "a\n\nc\n"
    assert remove_fact("a\n\nb\n", "b") == "a\n"
    assert remove_fact("a\n\nb", "b") == "a\n"
    assert remove_fact("b\n\nc", "b") == "c"
    assert remove_fact("- a\n- b\n- c\n", "b") == "- a\n- c\n"
    assert remove_fact("- a\r\n- b\r\n", "b") == "- a\r\n"
    assert remove_fact("- only", "only") == ""


def test_remove_fence_between_paragraphs_keeps_them_apart() -> None:
    md = "para one\n```\ncode\n```\npara two\n"
    out = remove_fact(md, "code")
    assert texts(out) == ["para one", "para two"]


def test_remove_fact_not_found() -> None:
    with pytest.raises(FactNotFound):
        remove_fact(MEMORY, "User likes coffee")
    with pytest.raises(FactNotFound):
        remove_fact(MEMORY, Fact("deadbeef", "", "nope", "nope"))
    with pytest.raises(FactNotFound):
        remove_fact(MEMORY, "tea")  # fuzzy matches are never removed directly


# --- diff --------------------------------------------------------------------------------


def test_diff_of_identical_text_is_empty() -> None:
    d = diff(MEMORY, MEMORY)
    assert d.is_empty
    assert d.counts == (0, 0, 0)
    assert d.unchanged == len(parse(MEMORY))


def test_rewording_is_changed_not_dropped_and_added() -> None:
    old = "## Profile\n- User lives in Berlin\n- User likes tea\n"
    new = "## Profile\n- The user lives in Berlin, Germany\n- User's dog is named Rex\n"
    d = diff(old, new)
    assert [(o.text, n.text) for o, n in d.changed] == [
        ("User lives in Berlin", "The user lives in Berlin, Germany")
    ]
    assert [f.text for f in d.dropped] == ["User likes tea"]
    assert [f.text for f in d.added] == ["User's dog is named Rex"]
    assert d.counts == (1, 1, 1)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("User lives in Berlin", "The user lives in Berlin, Germany"),
        ("Prefers dark mode", "Prefers dark mode in all editors"),
        ("User's name is Sam", "User's name is Samuel"),
        ("Works as a data engineer at Acme", "Works as a senior data engineer at Acme Corp"),
        ("User's birthday is March 3", "User's birthday is on 3 March"),
        ("User lives in Berlln", "User lives in Berlin"),
    ],
)
def test_similar_facts(a: str, b: str) -> None:
    assert similarity(a, b) >= 0.6
    assert diff(f"- {a}\n", f"- {b}\n").counts == (0, 0, 1)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("User likes tea", "User's dog is named Rex"),
        ("User lives in Berlin", "User's birthday is in March"),
        ("Uses vim", "Uses Python 3.12"),
        ("Works at Acme as a data engineer", "User's partner works at Acme too"),
        ("User likes tea", "User likes hiking"),
    ],
)
def test_unrelated_facts(a: str, b: str) -> None:
    assert similarity(a, b) < 0.6
    assert diff(f"- {a}\n", f"- {b}\n").counts == (1, 1, 0)


def test_moved_fact_is_unchanged() -> None:
    old = "## A\n- Likes tea\n- Plays chess\n## B\n- Owns a bike\n"
    new = "## A\n- Plays chess\n## B\n- Owns a bike\n- Likes tea\n"
    d = diff(old, new)
    assert d.is_empty
    assert d.unchanged == 3


def test_greedy_assignment_takes_the_best_pair() -> None:
    old = "- User lives in Berlin\n- User lives in Berlin Mitte near the park\n"
    new = "- User lives in Berlin Mitte near the big park\n"
    d = diff(old, new)
    assert [(o.text, n.text) for o, n in d.changed] == [
        ("User lives in Berlin Mitte near the park", "User lives in Berlin Mitte near the big park")
    ]
    assert [f.text for f in d.dropped] == ["User lives in Berlin"]


def test_threshold_controls_fuzzy_matching() -> None:
    old, new = "- User likes tea\n", "- User likes coffee\n"
    assert diff(old, new).counts == (1, 1, 0)
    assert diff(old, new, threshold=0.3).counts == (0, 0, 1)
    assert diff("- a b c\n", "- a b c d\n", threshold=1.01).counts == (1, 1, 0)


def test_duplicates_are_matched_one_for_one() -> None:
    d = diff("- x\n- x\n- y\n", "- x\n- y\n- y\n")
    assert [f.norm for f in d.dropped] == ["x"]
    assert [f.norm for f in d.added] == ["y"]
    assert d.unchanged == 2


def test_to_json_is_stable_and_complete() -> None:
    old = "## P\n- User lives in Berlin\n- Old fact about boats\n"
    new = "## P\n- The user lives in Berlin, Germany\n## Q\n- A brand new thing\n"
    d = diff(old, new)
    data = d.to_json()
    assert list(data) == ["added", "dropped", "changed", "unchanged"]
    assert data["added"] == [{"id": parse(new)[1].id, "section": "Q", "text": "A brand new thing"}]
    assert data["dropped"] == [
        {"id": parse(old)[1].id, "section": "P", "text": "Old fact about boats"}
    ]
    (change,) = data["changed"]
    assert list(change) == ["old", "new", "similarity"]
    assert change["old"]["text"] == "User lives in Berlin"
    assert change["new"]["text"] == "The user lives in Berlin, Germany"
    assert change["similarity"] == 0.9
    assert data["unchanged"] == 0
    assert json.loads(json.dumps(data)) == data
    assert json.dumps(diff(old, new).to_json()) == json.dumps(data)


def test_diff_facts_matches_diff() -> None:
    old, new = MEMORY, MEMORY.replace("tea", "green tea").replace("- Prefers dark mode\n", "")
    assert diff_facts(parse(old), parse(new)) == diff(old, new)


def test_factdiff_counts() -> None:
    f = Fact("1", "", "a", "a")
    g = Fact("2", "", "b", "b")
    d = FactDiff(added=[f, g], dropped=[f], changed=[], unchanged=4)
    assert d.counts == (2, 1, 0)
    assert not d.is_empty


# --- match_fact --------------------------------------------------------------------------


FACTS = parse(MEMORY)


def test_match_by_id_prefix_and_text() -> None:
    tea = next(f for f in FACTS if f.text == "User likes tea")
    assert match_fact(FACTS, tea.id) == tea
    assert match_fact(FACTS, tea.id[:4]) == tea
    assert match_fact(FACTS, f"  {tea.id[:6].upper()} ") == tea
    assert match_fact(FACTS, "user likes TEA.") == tea
    assert find_fact(FACTS, "user likes TEA.") == tea


def test_short_prefix_is_not_an_id() -> None:
    tea = next(f for f in FACTS if f.text == "User likes tea")
    assert find_fact(FACTS, tea.id[:3]) is None


def test_ambiguous_prefix_is_not_a_match() -> None:
    a = Fact("abcd1234", "", "first fact here", "first fact here")
    b = Fact("abcd5678", "", "second fact there", "second fact there")
    assert find_fact([a, b], "abcd") is None
    assert find_fact([a, b], "abcd5") == b


def test_duplicate_fact_found_by_suffixed_id() -> None:
    facts = parse("- Likes tea\n- likes tea\n")
    assert match_fact(facts, facts[1].id) is facts[1]


def test_fuzzy_match() -> None:
    by_text = {f.text: f for f in FACTS}
    assert match_fact(FACTS, "tea") == by_text["User likes tea"]
    assert match_fact(FACTS, "lives in berlin") == by_text["User lives in Berlin."]
    assert match_fact(FACTS, "dark mode") == by_text["Prefers dark mode"]
    assert (
        match_fact(FACTS, "works as data engineer at acme corp")
        == by_text["Works as a data engineer at Acme"]
    )


def test_fuzzy_match_none_when_weak_or_ambiguous() -> None:
    assert match_fact(FACTS, "quantum chromodynamics") is None
    assert match_fact(FACTS, "") is None
    assert match_fact(FACTS, "...") is None
    assert match_fact([], "tea") is None
    twins = parse("## A\n- Likes tea\n## B\n- Hates tea\n")
    assert match_fact(twins, "tea") is None


# --- properties --------------------------------------------------------------------------

_WORDS = """user likes tea coffee lives in berlin paris works at acme dog named rex cat
prefers dark mode vim the a is has two kids plays chess on weekends"""
_words = st.sampled_from(_WORDS.split())
_fact_text = st.lists(_words, min_size=1, max_size=8).map(" ".join)
_inline = st.text(alphabet=st.sampled_from("ab *_`#-<>!.\\"), min_size=1, max_size=12)
_line = st.one_of(
    _fact_text.map(lambda t: f"- {t}"),
    _fact_text.map(lambda t: f"* {t}"),
    _fact_text.map(lambda t: f"  {t}"),
    _fact_text.map(lambda t: f"    - {t}"),
    _fact_text,
    _fact_text.map(lambda t: f"## {t}"),
    _fact_text.map(lambda t: f"# {t}"),
    _inline,
    _inline.map(lambda t: f"- {t}"),
    st.sampled_from(["", "", "", "---", "```", "```py", "~~~", "<!--", "-->", "<!-- x -->", "-"]),
)
markdown = st.tuples(
    st.lists(_line, max_size=25), st.sampled_from(["\n", "\r\n"]), st.booleans()
).map(lambda t: t[1].join(t[0]) + (t[1] if t[2] else ""))


def _norm_counts(facts: list[Fact]) -> Counter[str]:
    return Counter(f.norm for f in facts)


@given(markdown)
def test_prop_diff_with_itself_is_empty(text: str) -> None:
    d = diff(text, text)
    assert d.is_empty
    assert d.unchanged == len(parse(text))


@given(markdown, markdown)
def test_prop_diff_accounts_for_every_fact(a: str, b: str) -> None:
    fa, fb = parse(a), parse(b)
    d = diff(a, b)
    new_ids = [f.id for f in d.added] + [n.id for _, n in d.changed]
    old_ids = [f.id for f in d.dropped] + [o.id for o, _ in d.changed]
    assert len(set(new_ids)) == len(new_ids) and set(new_ids) <= {f.id for f in fb}
    assert len(set(old_ids)) == len(old_ids) and set(old_ids) <= {f.id for f in fa}
    assert len(d.added) + len(d.changed) + d.unchanged == len(fb)
    assert len(d.dropped) + len(d.changed) + d.unchanged == len(fa)
    # What is left over in new after added and changed is exactly what old shares with it.
    rest_new = _norm_counts(fb) - _norm_counts(d.added) - Counter(n.norm for _, n in d.changed)
    rest_old = _norm_counts(fa) - _norm_counts(d.dropped) - Counter(o.norm for o, _ in d.changed)
    assert rest_new == rest_old
    assert sum(rest_new.values()) == d.unchanged


@given(markdown, st.data())
def test_prop_removing_a_fact_drops_exactly_it(text: str, data: st.DataObject) -> None:
    facts = parse(text)
    assume(facts)
    victim = data.draw(st.sampled_from(facts))
    out = remove_fact(text, victim)
    d = diff(text, out)
    assert [f.norm for f in d.dropped] == [victim.norm]
    assert d.added == [] and d.changed == []
    remaining = [(f.section, f.norm) for f in facts if f.id != victim.id]
    assert [(f.section, f.norm) for f in parse(out)] == remaining


def _canonical(fact: str) -> str:
    """The norm add_fact gives a fact text: one line, one leading list marker dropped."""
    return normalize(re.sub(r"^(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)", "", " ".join(fact.split())))


@given(
    markdown,
    st.one_of(_fact_text, _inline, st.text(min_size=1)),
    st.one_of(st.none(), _fact_text, _inline),
)
def test_prop_add_fact_adds_exactly_one(text: str, fact: str, section: str | None) -> None:
    expected = _canonical(fact)
    if not expected:
        with pytest.raises(FactError):
            add_fact(text, fact, section)
        return
    out = add_fact(text, fact, section)
    before, after = parse(text), parse(out)
    if expected in {f.norm for f in before}:
        assert out == text
        return
    d = diff(text, out)
    assert d.counts == (1, 0, 0)
    (new,) = d.added
    assert new.norm == expected
    (probe,) = parse(add_fact("", "probe", section))  # how add_fact spells the section
    assert normalize(new.section) == normalize(probe.section)
    others = [(f.id, f.section, f.norm) for f in after if f.id != new.id]
    assert others == [(f.id, f.section, f.norm) for f in before]


@given(_fact_text, _fact_text)
def test_prop_similarity_is_symmetric_and_bounded(a: str, b: str) -> None:
    s = similarity(a, b)
    assert 0.0 <= s <= 1.0
    assert s == similarity(b, a)
    assert similarity(a, a) == 1.0


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("User likes tea", "User does not like tea"),
        ("User likes tea", "User doesn’t like tea"),  # typographic apostrophe
        ("Lives in Oslo", "No longer lives in Oslo"),
        ("Is vegetarian", "Is not vegetarian anymore"),
        ("Never drinks coffee", "Drinks coffee"),
        ("Has a car", "Has no car"),
        ("Can eat gluten", "Can't eat gluten"),
    ],
)
def test_a_negation_is_a_different_fact_not_a_rewording(a: str, b: str) -> None:
    assert similarity(a, b) == 0.0
    assert diff(f"- {a}\n", f"- {b}\n").counts == (1, 1, 0)  # added, dropped, changed


def test_negation_on_both_sides_still_pairs_rewordings() -> None:
    assert diff("- Does not eat meat\n", "- Does not eat meat or fish\n").counts == (0, 0, 1)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("User has two kids", "User has two kids and no pets"),  # a negation that adds a detail
        ("Works as an engineer", "Works as an engineer (not a manager)"),
        ("Can't eat gluten", "Cannot eat gluten"),  # spellings of one negation
        ("Does not smoke", "Doesn't smoke"),
        ("Former teacher", "Former teacher, now a nurse"),
    ],
)
def test_a_negation_that_is_not_a_flip_is_still_a_rewording(a: str, b: str) -> None:
    assert similarity(a, b) >= 0.6
    assert diff(f"- {a}\n", f"- {b}\n").counts == (0, 0, 1)
