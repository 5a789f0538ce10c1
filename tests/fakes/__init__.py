"""Test stand-ins shared by the unit, e2e and extension contract tests.

* `embedder.HashingEmbedder` — a deterministic bag-of-words embedder (no model files).
* `ollama_server.ScriptedOllama` — a scripted HTTP stand-in for Ollama's API, so the real
  `ollama` client and the real agent loop run in tests.
"""
