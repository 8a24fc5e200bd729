"""The console front end: argument parsing, forwarding to a running instance,
output helpers, one module per command group. Nothing below imports it.
"""
