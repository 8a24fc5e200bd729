"""The doctor's checks of what came in from outside: the quarantine, records the fold cannot
read, purges.

* **quarantine** (``<home>/quarantine/``, :class:`~memtray.core.log.door.Quarantine`): what
  the door refused, from where, when and why: a warning, never a failure (nothing here
  was damaged: it was kept out);
* **unfoldable records**: a log written before the door existed may hold a peer's
  event the fold cannot read (a ``reminder.cancelled`` without its reminder). The fold
  skips it (the home works), the doctor names it, and its repair moves the line to the
  quarantine and puts a ``log.damaged`` placeholder in its place, so the sequence stays
  gapless and the event is gone from every fold;
* **purges**: who purged, when and how many events, this home's and other devices'.
"""

from __future__ import annotations

import contextlib
from collections import Counter

from memtray.core.base.clock import Clock, IdGenerator, format_ts
from memtray.core.base.findings import Finding
from memtray.core.base.fsutil import atomic_write
from memtray.core.base.home import Home, HomeLock
from memtray.core.log.door import KEEP_BYTES, Quarantine, Refusal, Source
from memtray.core.log.events import BadRecord, LogDamaged, Record, decode_raw, encode
from memtray.core.log.projections import State, apply
from memtray.core.log.segments import list_segments
from memtray.core.log.store import remove_checkpoints


def check_door(home: Home, full: State | None) -> list[Finding]:
    """Findings about the quarantine, and (with ``full``, a full replay) unfoldable records
    and purges."""
    out: list[Finding] = []
    entries = Quarantine(home.root).entries()
    if entries:
        by = Counter(f"{e.get('source', {}).get('kind', '?')} {e.get('source', {}).get('name', '?')}"
                     for e in entries)
        froms = ", ".join(f"{k} ({n})" for k, n in by.most_common(5))
        last = entries[-1]
        detail = (f"from {froms}; the last at {last.get('time')}: {last.get('reason')} (kept in quarantine/: "
                  "the reason and the first bytes; nothing of it entered the log)")
        out.append(Finding(True, f"warning: {len(entries)} event(s) or stream(s) from outside were refused",
                           detail, code="quarantine"))
    if full is None:
        return out
    if full.unfoldable_count:
        named = "; ".join(f"seq {k}: {v}" for k, v in list(full.unfoldable.items())[:5])
        out.append(Finding(
            False, f"{full.unfoldable_count} record(s) in the log cannot be read (skipped by every replay)",
            f"{named} (written before memtray checked what other devices sent)",
            "move them to quarantine/ and put placeholder records in their place (sequence stays gapless)",
            lambda: repair_unfoldable(home), "unfoldable"))
    if full.purges:
        p = full.purges[-1]
        out.append(Finding(True, f"note: {len(full.purges)} purge(s); the last at {p['ts']} by {p['by']}, "
                           f"{p['events']} event(s) rewritten (`memtray memory log` lists them)", code="purges"))
    return out


def repair_unfoldable(home: Home, clock: Clock | None = None) -> str:
    """Move every record the fold cannot read to the quarantine and write a ``log.damaged``
    placeholder with its seq in its place; the checkpoints go (start-up replays)."""
    clock = clock or Clock()
    ids = IdGenerator(clock)
    quarantine = Quarantine(home.root, clock)
    moved = 0
    with HomeLock(home):
        state = State()
        for _n, path in list_segments(home.events):
            raw = path.read_bytes()
            lines = raw.split(b"\n")
            tail = lines.pop()  # b"" after the last newline, or a torn record (cut on open)
            changed = False
            for i, line in enumerate(lines):
                try:
                    rec = decode_raw(line)
                except BadRecord:
                    continue  # damage: the log check's repair
                before = state.unfoldable_count
                apply(state, rec)
                if state.unfoldable_count == before:
                    continue
                source = Source("log", path.name, f"line {i + 1}")
                quarantine.put(Refusal(source, f"the fold cannot read it: {state.unfoldable.get(str(rec.seq), '')}",
                                       line[:KEEP_BYTES], len(line), rec.seq, _text(rec.id), _text(rec.type)))
                placeholder = Record(rec.seq, ids.new(), format_ts(clock.now()), LogDamaged.TYPE, 1, None,
                                     LogDamaged(side_file=f"quarantine ({path.name} line {i + 1})", lines=1).to_data())
                lines[i] = encode(placeholder)[:-1]
                changed = True
                moved += 1
            if changed:
                atomic_write(path, b"".join(ln + b"\n" for ln in lines) + tail)
        with contextlib.suppress(OSError):
            remove_checkpoints(home)
    return f"{moved} unreadable record(s) moved to quarantine/, placeholders in their place"


def _text(v: object) -> str | None:
    return v if isinstance(v, str) and len(v) <= 128 else None

