"""Sync: one data home's log and memory shared with its other devices through a git remote.

What a sync does is decided by the pure planner (``plan.py``); ``service.py`` and ``intake.py``
run git and apply it.
"""
