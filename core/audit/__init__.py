"""Auditing memory: rebuild from the log with another model, retention evaluation,
adopting a rebuilt branch.
"""
