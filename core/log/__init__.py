"""The event log and what is folded from it: the event codec and registry, the
segment log file, the store (append, subscribe, checkpoints), projections,
sessions, and the fault seam that tests use to break writes.
"""

from memtray.core.log import events  # noqa: F401 - the one registry: every payload class of every room
