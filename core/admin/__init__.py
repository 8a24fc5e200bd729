"""Looking after a data home: the doctor, purge, and desktop-entry installation.
"""
