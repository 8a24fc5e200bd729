"""History search: the derived full-text index over HISTORY.md and the log, and the
search_history tool.
"""
