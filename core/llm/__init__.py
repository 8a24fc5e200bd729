"""Talking to models: the litellm client (lazy import, retries, fallbacks), the
offline llama.cpp model, and the tool registry that describes function calls.
"""
