"""Ground floor: errors, clock and ids, files and the data home, settings, API keys,
redaction, logging, the worker thread, IPC transport and the notifier protocol.

Nothing here knows about events, memory or models; every other room builds on it.
"""
