"""Parallel mode: a coordinator process drives learner and collector processes over HTTP and a shared run directory.

Its packages and the layering rules are in docs/parallel.md and docs/architecture.md; nothing below this floor
imports it except the re-export modules that keep DI-engine's import paths.
"""
