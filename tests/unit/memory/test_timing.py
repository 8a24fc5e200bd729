"""Facts with a time (core/memory/timing.py) and how the guard takes a model's dates
(core/memory/proposal.py): read back from hand edits, validated at the door, supported by
the quote, and what is upcoming, current and past on a given day."""

from __future__ import annotations

from datetime import date

import pytest
from memtray.core.memory import facts, timing
from memtray.core.memory.proposal import apply_reply
from memtray.core.memory.receipts import read_receipts
from memtray.core.memory.timing import When

KYOTO = "Trip to Kyoto (from 2027-07-01 until 2027-07-31; check after 2027-08-01)"


def test_the_time_reads_back_from_what_it_writes() -> None:
    words, when = timing.split(KYOTO)
    assert words == "Trip to Kyoto"
    assert when == When(date(2027, 7, 1), date(2027, 7, 31), date(2027, 8, 1))
    assert timing.with_when(words, when) == KYOTO
    assert timing.with_when(KYOTO, When(until=date(2027, 9, 1))) == "Trip to Kyoto (until 2027-09-01)"
    assert timing.with_when(KYOTO, None) == "Trip to Kyoto"


@pytest.mark.parametrize("text", [
    "Trip to kyoto ( From 2027-07-01 to 2027-07-31 , Check again after 2027-8-1 )",
    "Trip to kyoto (from 2027-07-01 till 2027-07-31; checked 2026-12-01; check after 2027-08-01)",
    # as people type it: the parts in groups of their own, a full stop, full-width brackets
    "Trip to kyoto (from 2027-07-01 until 2027-07-31) (check after 2027-08-01)",
    "Trip to kyoto (from 2027-07-01 until 2027-07-31; check after 2027-08-01).",
    "Trip to kyoto （from 2027-07-01 until 2027-07-31） (check after 2027-08-01)。",
])
def test_a_hand_edit_in_other_words_is_still_read(text: str) -> None:
    words, when = timing.split(text)
    assert words == "Trip to kyoto" and when is not None
    assert (when.start, when.until, when.review) == (date(2027, 7, 1), date(2027, 7, 31), date(2027, 8, 1))


@pytest.mark.parametrize("text", [
    "Has a daughter (born 2019)",
    "Trip (until 2027-13-45)",  # no such month
    "Trip (from 2027-08-01 until 2027-07-01)",  # ends before it starts
    "Trip (from 2027-07-01; from 2027-08-01)",  # two starts: not ours to choose
    "Trip (until next July)",
    "(until 2027-07-01)",  # nothing but the parenthesis: it is the fact
    "Trip (until 2027-07-01",
])
def test_a_garbled_time_stays_text_and_never_fails(text: str) -> None:
    assert timing.split(text) == (text, None)
    assert timing.note([text], date(2027, 7, 2)) == ""


@pytest.mark.parametrize(("text", "why"), [
    ("Trip (until 2027-13-45)", "2027-13-45 is not a date"),
    ("Trip (from 2027-08-01 until 2027-07-01)", "'from' 2027-08-01 is after 'until' 2027-07-01"),
    # a wrong range before a right group is not read as half a time
    ("Trip (from 2027-08-01 until 2027-07-01) (checked 2026-12-04; check after 2027-03-04)", "is after 'until'"),
    ("Trip (from 2027-07-01) (from 2027-08-01)", "twice"),
    ("Trip (until 2027-07-01 or so)", "not in a form memtray reads"),
])
def test_a_time_that_cannot_be_read_says_why(text: str, why: str) -> None:
    assert timing.split(text) == (text, None)
    assert why in (timing.problem(text) or "")


@pytest.mark.parametrize("text", ["Has a daughter (born 2019)", "Likes jazz (and blues)", "Trip to Kyoto",
                                  KYOTO, "Meeting (see notes) (until 2027-01-01)"])
def test_words_in_brackets_or_a_good_time_are_no_problem(text: str) -> None:
    assert timing.problem(text) is None


def test_status_moves_from_upcoming_to_current_to_past() -> None:
    when = timing.split(KYOTO)[1]
    assert [timing.status(when, date(2027, m, d)) for m, d in ((6, 30), (7, 1), (7, 31), (8, 1))] == [
        "upcoming", "current", "current", "past"]
    assert not timing.ended(when, date(2027, 8, 7)) and timing.ended(when, date(2027, 8, 8))
    assert timing.status(When(review=date(2027, 1, 1)), date(2030, 1, 1)) is None  # holds always
    assert timing.due(when, date(2027, 8, 1)) and not timing.due(when, date(2027, 7, 31))


def test_a_yes_moves_the_review_by_the_same_interval_within_bounds() -> None:
    when = When(review=date(2027, 3, 1), checked=date(2027, 2, 1))
    after = timing.checked(when, date(2027, 3, 2))
    assert (after.checked, after.review) == (date(2027, 3, 2), date(2027, 3, 30))  # 28 days again
    assert timing.checked(None, date(2027, 1, 1)).review == date(2027, 4, 1)  # the default 90 days
    ending = timing.checked(When(until=date(2027, 1, 10), review=date(2027, 1, 1)), date(2027, 1, 2))
    assert ending.review == date(2027, 1, 10)  # never past the end


@pytest.mark.parametrize(("members", "reason"), [
    ({"until": "July"}, "'until' is not a date in the form YYYY-MM-DD: 'July'"),
    ({"until": "2027-02-30"}, "'until' is not a real date: '2027-02-30'"),
    ({"from": 20270701}, "'from' is not a date (YYYY-MM-DD)"),
    ({"from": "2027-08-01", "until": "2027-07-01"}, "'from' (2027-08-01) is after 'until' (2027-07-01)"),
    ({"review_after": "2999-01-01"}, "'review_after' is not a real date: '2999-01-01'"),
    ({"review_after": "2040-01-01"}, "'review_after' (2040-01-01) is more than five years away"),
])
def test_the_door_refuses_what_is_no_date(members: dict[str, object], reason: str) -> None:
    assert timing.read_members(members, date(2027, 1, 1)) == (None, reason)


@pytest.mark.parametrize(("quote", "ok"), [
    ("I'm off to Kyoto in July", True),
    ("We fly to Kyoto from July 1st to the 31st, 2027", True),
    ("I'm going to Kyoto", False),  # says nothing of when
    ("I'm going to Kyoto in August", False),  # another month
    ("Kyoto in July 2028", False),  # another year
])
def test_the_quote_must_say_when(quote: str, ok: bool) -> None:
    when = When(date(2027, 7, 1), date(2027, 7, 31))
    assert (timing.supports(quote, when) == "") is ok
    assert timing.supports(quote, When(review=date(2027, 8, 1))) == ""  # when to ask is the model's call
    assert timing.supports(quote, When(checked=date(2027, 8, 1))) != ""  # a check date never is


def test_the_note_says_what_is_upcoming_current_and_past() -> None:
    pairs = [KYOTO, "Lives in Graz", "Exam week (from 2027-06-01 until 2027-06-05)",
             "Training for the marathon (check after 2027-09-01)"]
    text = timing.note(pairs, date(2027, 6, 10))
    assert "as of 2027-06-10" in text
    assert "> Upcoming: Trip to Kyoto (from 2027-07-01 until 2027-07-31)" in text
    assert "> Past: Exam week (from 2027-06-01 until 2027-06-05)" in text
    assert "Graz" not in text and "marathon" not in text and "Current" not in text
    assert timing.is_note(f"[Runtime context: ...]\n{text}") and not timing.is_note("[Runtime context: ...]")
    assert timing.note_lines(text) == timing.note_lines(timing.note(pairs, date(2027, 6, 11)))  # only the date moved


# --- the guard ----------------------------------------------------------------------------

OLD = "## Me\n- Lives in Graz\n- Training for the Berlin marathon\n"
MESSAGES = ["I'm going to Kyoto in July!", "Nice, enjoy.", "The marathon training runs until September.",
            "I fly to Rome next week."]
ROLES = ["user", "assistant", "user", "user"]


def _apply(**reply: object):  # type: ignore[no-untyped-def]
    current = facts.attach(facts.Ledger(()), OLD)
    return apply_reply(current, OLD, memory_update=reply.get("memory_update"),  # type: ignore[arg-type]
                       edits=reply.get("edits"), removed=[], messages=MESSAGES,  # type: ignore[arg-type]
                       roles=ROLES, receipts=read_receipts(reply.get("receipts")))


def test_an_added_fact_carries_the_time_the_quote_says() -> None:
    out = _apply(edits=[{"op": "add", "text": "Going to Kyoto", "from": "2027-07-01", "until": "2027-07-31",
                         "review_after": "2027-08-01", "receipt": {"messages": [1], "quote": "going to Kyoto in July"}}])
    assert "- Going to Kyoto (from 2027-07-01 until 2027-07-31; check after 2027-08-01)\n" in out.memory and out.flagged == []


def test_an_update_sets_a_time_on_a_fact_and_keeps_its_id() -> None:
    out = _apply(edits=[{"op": "update", "id": "F2", "until": "2027-09-30",
                         "receipt": {"messages": [3], "quote": "training runs until September"}}])
    assert "- Training for the Berlin marathon (until 2027-09-30)\n" in out.memory
    assert out.ledger.ids == ["F1", "F2"] and out.flagged == []
    # a later rewording that does not restate the time keeps it
    cur = out.ledger
    again = apply_reply(cur, out.memory, memory_update=None, removed=[], messages=MESSAGES, roles=ROLES,
                        edits=[{"op": "update", "id": "F2", "text": "Trains for the Berlin marathon"}])
    assert "- Trains for the Berlin marathon (until 2027-09-30)\n" in again.memory


def test_a_time_the_quote_does_not_say_is_held_with_the_reason() -> None:
    out = _apply(edits=[{"op": "add", "text": "Going to Kyoto", "from": "2027-08-01", "until": "2027-08-31",
                         "receipt": {"messages": [1], "quote": "going to Kyoto in July"}}])
    assert "Kyoto" not in out.memory
    [item] = out.flagged
    assert item["kind"] == "unsupported" and "another month" in item["reason"]
    # the words known already, a new time with no receipt: held, the fact as it was
    out = _apply(edits=[{"op": "update", "id": "F2", "until": "2027-09-30"}])
    assert out.memory == OLD and out.flagged[0]["reason"] == "no receipt says when the fact holds"


def test_a_time_in_memory_update_is_checked_like_one_in_an_edit() -> None:
    good = "## Me\n- [F1] Lives in Graz\n- [F2] Training for the Berlin marathon\n- Flies to Rome (from 2027-01-04 until 2027-01-10) [#4]\n"
    out = _apply(memory_update=good, receipts=[{"fact": "Flies to Rome", "messages": [4],
                                                "quote": "I fly to Rome next week"}])
    assert "- Flies to Rome (from 2027-01-04 until 2027-01-10)" in out.memory and out.flagged == []
    bad = good.replace("Flies to Rome", "Going to Kyoto").replace("[#4]", "[#1]").replace("2027-01", "2027-03")
    out = _apply(memory_update=bad, receipts=[{"fact": "Going to Kyoto", "messages": [1],
                                               "quote": "going to Kyoto in July"}])
    assert "Kyoto" not in out.memory and "another month" in out.flagged[0]["reason"]


def test_a_hand_edit_that_moves_the_date_keeps_the_facts_id() -> None:
    before = facts.attach(facts.Ledger(()), f"- {KYOTO}\n- Lives in Graz\n")
    after = facts.attach(before, "- Trip to Kyoto (from 2027-07-05 until 2027-07-20)\n- Lives in Graz\n",
                         in_place=True)
    assert after.ids == before.ids


def test_a_rewording_in_memory_update_that_leaves_the_time_out_keeps_it() -> None:
    dated = "## Me\n- Lives in Graz\n- Training for the Berlin marathon (until 2027-09-30)\n"
    current = facts.attach(facts.Ledger(()), dated)
    out = apply_reply(current, dated, memory_update="## Me\n- [F1] Lives in Graz\n- [F2] Trains for the Berlin marathon\n",
                      edits=None, removed=[], messages=MESSAGES, roles=ROLES)
    assert "- Trains for the Berlin marathon (until 2027-09-30)\n" in out.memory
    assert out.ledger.ids == ["F1", "F2"] and out.flagged == []
    same = apply_reply(current, dated, memory_update="## Me\n- [F1] Lives in Graz\n- [F2] Training for the Berlin marathon\n",
                       edits=None, removed=[], messages=MESSAGES, roles=ROLES)
    assert same.memory == dated and [v.kind for v in same.verdicts if v.id == "F2"] == ["kept"]


def test_a_check_date_the_model_writes_itself_is_held() -> None:
    forged = "## Me\n- [F1] Lives in Graz\n- [F2] Training for the Berlin marathon (checked 2027-01-01; check after 2027-06-01)\n"
    out = _apply(memory_update=forged, receipts=[{"fact": "F2", "messages": [3], "quote": "training runs until September"}])
    assert out.memory == OLD
    [item] = out.flagged
    assert item["fact_id"] == "F2" and item["reason"] == (
        "its time: a check date is recorded by memtray, never set by the model")


# --- relative words, on the day they were said ------------------------------------------------

def test_relative_words_name_days_of_the_day_they_were_said() -> None:
    from memtray.core.memory.timing import relative_span

    wed = date(2026, 12, 2)
    assert relative_span("I'm in Lisbon this week", wed) == (date(2026, 11, 30), date(2026, 12, 6))
    assert relative_span("until the end of the week", wed) == (date(2026, 11, 30), date(2026, 12, 6))
    assert relative_span("busy next week", wed) == (date(2026, 12, 7), date(2026, 12, 13))
    assert relative_span("This weekend I'm at my parents'", wed) == (date(2026, 12, 5), date(2026, 12, 6))
    assert relative_span("this weekend", date(2026, 12, 6)) == (date(2026, 12, 5), date(2026, 12, 6))  # a Sunday
    assert relative_span("Ana visits tomorrow", wed) == (date(2026, 12, 3), date(2026, 12, 3))
    assert relative_span("today and tomorrow", wed) == (wed, date(2026, 12, 3))
    assert relative_span("next week", date(2026, 12, 6)) == (date(2026, 12, 7), date(2026, 12, 13))
    # other words that say when: not read here (the model's dates stand, supports() checks them)
    for quote in ("in July", "this week, back on Friday", "this week of 2026", "tomorrow, 2026-12-03",
                  "I may be away this week", "next month", "I'm in Lisbon"):
        assert relative_span(quote, wed) is None, quote


def test_anchored_moves_only_dates_outside_the_days_said() -> None:
    from memtray.core.memory.timing import anchored

    wed = date(2026, 12, 2)
    late = When(start=date(2026, 12, 10), until=date(2026, 12, 13), review=date(2026, 12, 20))
    assert anchored(late, "I'm in Lisbon this week", wed) == When(date(2026, 11, 30), date(2026, 12, 6),
                                                                  date(2026, 12, 20))
    inside = When(start=wed, until=date(2026, 12, 4))
    assert anchored(inside, "in Lisbon this week", wed) == inside
    assert anchored(When(until=date(2027, 7, 31)), "Kyoto in July", wed) == When(until=date(2027, 7, 31))


def test_a_messages_day_is_the_users_day_in_their_zone() -> None:
    """"Tomorrow" said at 18:00 UTC on a Wednesday is Friday for a user in Auckland (07:00 Thursday there)."""
    from memtray.core.memory.relative import message_days
    from memtray.core.memory.timing import anchored

    said = [{"role": "user", "ts": "2026-12-02T18:00:00.000Z"}, {"role": "assistant"}, {"ts": "not a time"}]
    assert message_days(said, "UTC") == [date(2026, 12, 2), None, None]
    [auckland, _, _] = message_days(said, "Pacific/Auckland")
    assert auckland == date(2026, 12, 3)
    assert anchored(When(until=date(2026, 12, 11)), "back tomorrow", auckland).until == date(2026, 12, 4)
