"""memtray.core — the headless library: event log, sessions, memory, LLM access, CLI.

Nothing in this package imports Qt; ``memtray.desktop`` renders what this
package computes and sends it commands.
"""

__version__ = "0.1.0"
