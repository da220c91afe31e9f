"""Parallel mode: a coordinator process drives learner and collector processes over HTTP and a shared run directory
(docs/parallel.md; its layering rules: docs/architecture.md)."""
