"""Facts with a time from the command line, as a user would: `memory dated` and `memory
review-due` list them, `memory check ID --yes|--no-longer|--edit` answers (each a revision
with its reason), `memory expire` removes what is past its end (undoable). The dates are far
from any day the test may run on, so the wall clock decides nothing."""

from __future__ import annotations

import json

from memtray.core.app import App
from memtray.core.base.home import Home

from tests.integration.test_memory_cli import fails, ok

MEMORY = """## Plans
- Trip to Kyoto (from 2001-07-01 until 2001-07-31)
- Moving to Lisbon (from 2199-01-01)

## Sport
- Training for the Berlin marathon (check after 2001-01-01)
- Plays chess (check after 2199-01-01)
- Has a daughter (born 2019)
"""


def _seed(home: Home) -> dict[str, str]:
    with App.open(home, start_services=False) as app:
        app.worker.call(lambda: app.memory.write(MEMORY, reason="user-edit", source="user"))
        return {f.text.split(" (")[0]: f.id for f in app.memory.ledger().facts}


def test_dated_facts_and_checks_from_the_command_line(home: Home) -> None:
    ids = _seed(home)
    rows = {r["words"]: r for r in json.loads(ok(home, "memory", "dated", "--json"))}
    assert all("scope" not in r for r in rows.values())  # a home without scopes: the shape as it was
    assert set(rows) == {"Trip to Kyoto", "Moving to Lisbon", "Training for the Berlin marathon", "Plays chess"}
    assert (rows["Trip to Kyoto"]["status"], rows["Moving to Lisbon"]["status"]) == ("past", "upcoming")
    assert rows["Trip to Kyoto"]["time"] == {"from": "2001-07-01", "until": "2001-07-31"}
    due = json.loads(ok(home, "memory", "review-due", "--json"))
    assert [d["id"] for d in due] == [ids["Training for the Berlin marathon"]]
    assert "Still training for the Berlin marathon?" in ok(home, "memory", "review-due")

    fid = ids["Training for the Berlin marathon"]
    out = json.loads(ok(home, "memory", "check", fid.lower(), "--yes", "--json"))  # typed as "f4"
    assert out["id"] == fid
    assert out["answer"] == "yes" and out["revision"]["reason"] == "review"
    assert "checked " in out["after"] and "check after " in out["after"]
    assert json.loads(ok(home, "memory", "review-due", "--json")) == []
    assert out["already_checked"] is False
    # the same answer again today: nothing new is written, and it says so
    revisions = len(json.loads(ok(home, "memory", "log", "--json")))
    again = json.loads(ok(home, "memory", "check", fid, "--yes", "--json"))
    assert again["already_checked"] is True and again["before"] == again["after"] == out["after"]
    assert again["revision"]["rev"] == out["revision"]["rev"]
    assert "already checked today" in ok(home, "memory", "check", fid, "--yes")
    assert len(json.loads(ok(home, "memory", "log", "--json"))) == revisions
    out = json.loads(ok(home, "memory", "check", ids["Plays chess"], "--edit", "Plays", "chess", "online", "--json"))
    assert out["after"].startswith("Plays chess online (checked ")
    out = json.loads(ok(home, "memory", "check", fid, "--no-longer", "--json"))
    assert out["after"] is None
    [gone] = [d for d in json.loads(ok(home, "memory", "dropped", "--json")) if d["id"] == fid]
    assert gone["reason"] == "no longer true (answered when asked to check it)"
    fails(home, "memory", "check", "F999", "--yes", needle="no fact 'F999' in memory now")

    text = ok(home, "memory", "expire")
    # one clause after the fact's own time, never brackets inside brackets
    assert f"removed {ids['Trip to Kyoto']}: Trip to Kyoto (from 2001-07-01 until 2001-07-31); ended on 2001-07-31\n" in text
    assert "((" not in text and "))" not in text
    assert "Kyoto" not in ok(home, "memory", "show")
    assert "Has a daughter (born 2019)" in ok(home, "memory", "show")  # a parenthesis that is no time stays
    assert ok(home, "memory", "expire") == "no fact is past its end\n"
    rev = json.loads(ok(home, "memory", "log", "--json"))[0]
    assert rev["reason"] == "expired" and rev["removed"] == 1
    ok(home, "memory", "undo", rev["rev"])
    assert "Trip to Kyoto" in ok(home, "memory", "show")
    assert ok(home, "memory", "expire") == "no fact is past its end\n"  # the undo stands


def test_a_hand_edit_of_the_file_moves_a_date_or_garbles_one_and_nothing_breaks(home: Home) -> None:
    ids = _seed(home)
    path = home.root / "memory" / "MEMORY.md"
    text = path.read_text(encoding="utf-8")
    text = text.replace("(from 2199-01-01)", "(From 2199-02-01)")  # moved, in the user's own case
    text = text.replace("(check after 2199-01-01)", "(check after 2199-13-45)")  # no such month
    text = text.replace("(check after 2001-01-01)", "(until July-ish)")  # no date at all
    path.write_text(text, encoding="utf-8")
    facts = {f["id"]: f for f in json.loads(ok(home, "memory", "facts", "--json"))}  # the edit is adopted
    assert facts[ids["Moving to Lisbon"]]["text"] == "Moving to Lisbon (From 2199-02-01)"  # same id
    assert facts[ids["Plays chess"]]["text"] == "Plays chess (check after 2199-13-45)"
    rows = {r["id"]: r for r in json.loads(ok(home, "memory", "dated", "--json"))}
    assert rows[ids["Moving to Lisbon"]]["time"] == {"from": "2199-02-01"}
    assert ids["Plays chess"] not in rows  # a garbled time is text: no time, nothing lost
    assert json.loads(ok(home, "memory", "review-due", "--json")) == []
    assert "Training for the Berlin marathon (until July-ish)" in ok(home, "memory", "show")


def test_an_edit_with_a_time_that_cannot_be_read_is_refused_and_one_typed_loosely_is_read(home: Home) -> None:
    ids = _seed(home)
    chess = ids["Plays chess"]
    before = ok(home, "memory", "show")
    # a range that ends before it starts was written as words beside a new check date
    fails(home, "memory", "check", chess, "--edit", "Trip (from 2027-01-01 until 2026-01-01)",
          needle="'from' 2027-01-01 is after 'until' 2026-01-01")
    fails(home, "memory", "edit", chess, "Plays chess (until 2027-02-30)", needle="2027-02-30 is not a date")
    assert ok(home, "memory", "show") == before  # nothing written
    # the parts in two groups, a full stop after them: read as one time, written back in one
    ok(home, "memory", "edit", chess, "Plays chess (from 2198-01-01 until 2199-12-31) (check after 2198-06-01).")
    rows = {r["id"]: r for r in json.loads(ok(home, "memory", "dated", "--json"))}
    assert rows[chess]["words"] == "Plays chess"
    assert rows[chess]["time"] == {"from": "2198-01-01", "until": "2199-12-31", "review_after": "2198-06-01"}


def test_a_fact_past_its_end_is_not_checked_as_still_true(home: Home) -> None:
    """`memory check ID --yes` on a fact whose time has ended wrote "checked today; check after
    tomorrow" into it, as if it were current, and it was listed as due. It says plainly that
    the fact has ended, writes nothing, and is not asked about; new words with a new time, or
    "no longer", still answer; once it has left memory (expired) the check says that too."""
    ended = "Leading the Halcyon migration (from 2001-01-01 until 2001-03-31; check after 2001-02-01)"
    with App.open(home, start_services=False) as app:
        app.worker.call(lambda: app.memory.write(f"## Work\n- {ended}\n- Plays chess\n", reason="user-edit",
                                                 source="user"))
        fid = next(f.id for f in app.memory.ledger().facts if "Halcyon" in f.text)
    [row] = [r for r in json.loads(ok(home, "memory", "dated", "--json")) if r["id"] == fid]
    assert row["status"] == "past" and row["due"] is False  # its check date came, but it has ended
    assert json.loads(ok(home, "memory", "review-due", "--json")) == []
    revisions = len(json.loads(ok(home, "memory", "log", "--json")))

    fails(home, "memory", "check", fid, "--yes", needle=f"{fid} ended on 2001-03-31: it is past its end")
    fails(home, "memory", "check", fid, "--yes", "--json", needle="it is past its end")
    fails(home, "memory", "check", fid, "--edit", "Leading", "the", "Halcyon", "rollout", needle="past its end")
    assert len(json.loads(ok(home, "memory", "log", "--json"))) == revisions
    assert ended in ok(home, "memory", "show")

    out = json.loads(ok(home, "memory", "check", fid, "--edit", "Leading the Halcyon rollout (until 2199-03-31)",
                        "--json"))
    assert out["after"].startswith("Leading the Halcyon rollout (until 2199-03-31")

    with App.open(home, start_services=False) as app:
        app.worker.call(lambda: app.memory.write(app.store.state.memory + "- Ran the Tokyo marathon (until 2001-03-01)\n",
                                                 reason="user-edit", source="user"))
        tokyo = next(f.id for f in app.memory.ledger().facts if "Tokyo" in f.text)
    out = json.loads(ok(home, "memory", "check", tokyo, "--no-longer", "--json"))  # "no longer" is still an answer
    assert out["after"] is None

    with App.open(home, start_services=False) as app:
        app.worker.call(lambda: app.memory.write(app.store.state.memory + "- Ran the Paris marathon (until 2001-04-01)\n",
                                                 reason="user-edit", source="user"))
        paris = next(f.id for f in app.memory.ledger().facts if "Paris" in f.text)
    assert "Paris marathon" in ok(home, "memory", "expire")
    rev = json.loads(ok(home, "memory", "log", "--json"))[0]["rev"][:8]
    fails(home, "memory", "check", paris, "--yes",
          needle=f"{paris} has ended and is no longer in memory: ended on 2001-04-01, removed in "
                 f"revision {rev}")
