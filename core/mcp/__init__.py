"""MCP: memtray as a Model Context Protocol server (``memtray mcp``) and as a client of other servers."""
