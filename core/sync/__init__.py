"""Sync: one data home's log and memory shared with its other devices through a git remote."""
