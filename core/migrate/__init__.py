"""Imports: another assistant's memory and conversations brought into the log (``memtray import``)."""
