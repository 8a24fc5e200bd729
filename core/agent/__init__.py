"""One turn of conversation: the agent loop, the prompt context it builds, and
time travel (rebuilding the exact prompt of a past turn).
"""
