"""The event log and what is folded from it: the event codec and registry, the
segment log file, the store (append, subscribe, checkpoints), projections,
sessions, and the fault seam that tests use to break writes.
"""

from memtray.core.log import (
    conversations,  # noqa: F401 - registers session.titled
    integrations,  # noqa: F401 - registers the import.* and mcp.* payloads
)
