"""Long-term memory: the git projection of MEMORY.md/HISTORY.md, the fact diff and
fact identity, the consolidation guard and service, provenance, injection checks
and the remember/forget tools.
"""
