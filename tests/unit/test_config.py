"""Settings: defaults, merging, and invalid values that fall back with one message."""

from __future__ import annotations

from kb_lsp.config import Settings, env_settings, load_settings


def test_defaults() -> None:
    settings = load_settings().settings
    assert settings == Settings()
    assert settings.include == ["**/*.md", "**/*.markdown"]
    assert (settings.chunk_size, settings.chunk_overlap) == (800, 200)
    assert settings.max_file_size == 2 * 1024 * 1024
    assert settings.agent.max_steps == 7
    assert settings.embedder.provider == "minilm"


def test_later_sources_win_and_nested_merge() -> None:
    loaded = load_settings(
        {"ollama": {"host": "http://a:1", "model": "llama3.2"}},
        {"ollama.host": "b:2", "kb.search.limit": 5},
    )
    assert loaded.problems == []
    assert loaded.settings.ollama.host == "http://b:2"
    assert loaded.settings.ollama.model == "llama3.2"
    assert loaded.settings.search.limit == 5


def test_invalid_values_fall_back_with_one_message() -> None:
    loaded = load_settings(
        {
            "chunkSize": "big",
            "search": {"threshold": 7},
            "include": ["**/*.md", 3],
            "embedder": {"provider": "word2vec"},
            "ollama": {"host": "", "model": "qwen2.5:7b"},
            "agent": {"maxSteps": 0},
        }
    )
    settings = loaded.settings
    assert settings.chunk_size == 800
    assert settings.search.threshold == Settings().search.threshold
    assert settings.include == ["**/*.md", "**/*.markdown"]
    assert settings.embedder.provider == "minilm"
    assert settings.ollama.host == "http://127.0.0.1:11434"
    assert settings.agent.max_steps == 7
    message = loaded.message or ""
    for name in (
        "kb.chunkSize",
        "kb.search.threshold",
        "kb.include",
        "kb.embedder.provider",
        "kb.ollama.host",
        "kb.agent.maxSteps",
    ):
        assert name in message


def test_settings_that_are_not_an_object() -> None:
    loaded = load_settings(["not", "a", "dict"])  # type: ignore[arg-type]
    assert loaded.settings == Settings()
    assert "must be an object" in (loaded.message or "")


def test_unknown_keys_are_ignored() -> None:
    loaded = load_settings({"server": {"python": "/usr/bin/python3"}, "futureThing": 1})
    assert loaded.problems == []


def test_environment() -> None:
    raw = env_settings({"KB_STORAGE": "/tmp/s", "OLLAMA_HOST": "h:1", "KB_OLLAMA_MODEL": "m"})
    settings = load_settings(raw).settings
    assert settings.storage == "/tmp/s"
    assert settings.ollama.host == "http://h:1"
    assert settings.ollama.model == "m"
    assert env_settings({"OLLAMA_HOST": "a:1", "KB_OLLAMA_HOST": "b:2"})["ollama"]["host"] == "b:2"
