"""Reminders: parsing and computing schedules (spec) and the service that schedules,
lists, cancels and delivers them.
"""
