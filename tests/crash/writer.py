"""A writer process for crash tests: appends events, printing each acknowledged seq.

Usage: python writer.py HOME N [SEGMENT_BYTES]. Prints ``ack <seq>`` after each
append returned (i.e. after fsync), flushing stdout each time, so the parent
knows exactly which events were acknowledged before it sends SIGKILL.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memtray.core.base.home import Home
from memtray.core.log.events import Message
from memtray.core.log.store import Store


def main() -> None:
    home = Home.resolve(Path(sys.argv[1]))
    n = int(sys.argv[2])
    seg = int(sys.argv[3]) if len(sys.argv) > 3 else 16 * 1024 * 1024
    store = Store.open(home, segment_bytes=seg)
    print(f"start {store.log.last_seq}", flush=True)
    for i in range(n):
        rec = store.append(Message(role="user", content=f"m{i} " + "x" * (i % 300)), session=f"s{i % 3}")
        print(f"ack {rec.seq}", flush=True)
    store.close()
    print("done", flush=True)


if __name__ == "__main__":
    main()
