"""merge_history: the diary of a merge revision, a pure and symmetric function of the diaries."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st
from memtray.core.memory.revisions import diary_entries, merge_history

BASE = "[2026-11-01 09:00] Set up memtray.\n\n[2026-11-02 09:00] Talked about Lyon.\n\n"


def test_both_sides_entries_are_kept_once_in_date_order() -> None:
    a = BASE + "[2026-11-03 10:00] Chess on Sundays.\n\n[2026-11-05 10:00] Japanese novels.\n\n"
    b = BASE + "[2026-11-04 08:00] A cat named Rex.\n\n"
    out = merge_history([BASE], [a, b])
    assert diary_entries(out) == [*diary_entries(BASE), "[2026-11-03 10:00] Chess on Sundays.",
                                  "[2026-11-04 08:00] A cat named Rex.", "[2026-11-05 10:00] Japanese novels."]
    assert out == merge_history([BASE], [b, a])


def test_an_entry_both_sides_hold_after_an_earlier_merge_is_not_doubled() -> None:
    first = merge_history([BASE], [BASE + "[2026-11-03 10:00] a1\n\n", BASE + "[2026-11-03 09:00] b1\n\n"])
    a = first + "[2026-11-04 10:00] a2\n\n"
    b = first + "[2026-11-04 11:00] b2\n\n"
    out = merge_history([first], [a, b])
    assert diary_entries(out) == [*diary_entries(first), "[2026-11-04 10:00] a2", "[2026-11-04 11:00] b2"]
    # without the base (no common ancestor known) nothing is doubled either
    assert merge_history([], [a, b]) == out


def test_an_entry_of_the_base_removed_on_one_side_stays_removed() -> None:
    edited = "[2026-11-01 09:00] Set up memtray.\n\n"  # the user deleted the Lyon entry by hand
    b = BASE + "[2026-11-04 08:00] A cat named Rex.\n\n"
    out = merge_history([BASE], [edited, b])
    assert "Lyon" not in out and "Rex" in out and "Set up memtray" in out
    assert out == merge_history([BASE], [b, edited])


def test_undated_text_a_hand_written_heading_and_blank_lines_inside_an_entry() -> None:
    a = "# My diary\n\n[2026-11-01 09:00] One\nwith a second line\n\n"
    b = "# My diary\n\n[2026-11-01 09:00] One\nwith a second line\n\n[2026-11-02 09:00] Two\n\n"
    assert diary_entries(a) == ["# My diary", "[2026-11-01 09:00] One\nwith a second line"]
    assert merge_history([a], [a, b]) == b
    assert merge_history([""], ["just some notes", "other notes"]) == "just some notes\n\nother notes\n\n"


def test_three_sides_at_once() -> None:
    sides = [BASE + f"[2026-11-0{3 + i} 10:00] device {i}\n\n" for i in range(3)]
    outs = {merge_history([BASE], list(p)) for p in itertools.permutations(sides)}
    assert len(outs) == 1
    assert all(f"device {i}" in next(iter(outs)) for i in range(3))


_entry = st.builds(lambda d, h, t: f"[2026-11-{d:02d} {h:02d}:00] {t}", st.integers(1, 28), st.integers(0, 23),
                   st.text(st.characters(whitelist_categories=("L", "N", "Zs")), min_size=1, max_size=12).map(str.strip)
                   .filter(bool))


@given(st.lists(_entry, max_size=4, unique=True), st.lists(_entry, max_size=4, unique=True),
       st.lists(_entry, max_size=4, unique=True))
def test_symmetric_and_loses_no_added_entry(base: list[str], x: list[str], y: list[str]) -> None:
    def text(es: list[str]) -> str:
        return "".join(e + "\n\n" for e in es)

    x, y = [e for e in x if e not in base], [e for e in y if e not in base]  # a diary that repeats itself is kept as it is
    b = text(base)
    a_side, b_side = text(base + x), text(base + y)
    out = merge_history([b], [a_side, b_side])
    assert out == merge_history([b], [b_side, a_side])
    got = diary_entries(out)
    assert len(got) == len(set(got))
    assert set(got) == set(base) | set(x) | set(y)


def test_an_entry_a_side_wrote_twice_stays_twice_and_windows_line_ends_read_alike() -> None:
    same = "[2026-11-05 09:00] Nothing new to remember."
    a = BASE + same + "\n\n" + "[2026-11-06 09:00] A.\n\n" + same + "\n\n"
    b = BASE + "[2026-11-07 09:00] B.\n\n"
    out = merge_history([BASE], [a, b])
    assert diary_entries(out).count(same) == 2 and out == merge_history([BASE], [b, a])
    crlf = (BASE + "[2026-11-02 09:00] A.\n\n").replace("\n", "\r\n")
    both = merge_history([BASE], [crlf, BASE + "[2026-11-03 09:00] B.\n\n"])
    assert both.count("Set up memtray.") == 1 and "A." in both and "B." in both and "\r" not in both
