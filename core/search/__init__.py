"""History search: keyword (FTS5) and semantic (embeddings) retrieval over the log's
messages, the HISTORY.md diary and memory edits, fused into hybrid search; recall
of past snippets for a turn; the search_history tool.

text (hits, queries, excerpts) < index (keywords) < vectors < embed < hybrid < service;
health is what the doctor reports.
"""
