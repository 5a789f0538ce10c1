"""Settings: defaults, layering, and invalid values that fall back to the next valid source."""

from __future__ import annotations

from kb_lsp.config import Layer, Settings, changed_settings, env_settings, load_settings


def _layers(
    environment: object = None, initialization: object = None, workspace: object = None
) -> list[Layer]:
    """The server's sources, lowest first, as it passes them."""
    return [
        Layer("the environment", environment),
        Layer("initializationOptions", initialization),
        Layer("workspace settings", workspace),
    ]


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
            "include": ["**/*.md", 3, 4],
            "embedder": {"provider": "word2vec"},
            "ollama": {"host": "   /", "model": "qwen2.5:7b"},
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
        "kb.chunkSize = 'big'",
        "kb.search.threshold = 7",
        "kb.include = ['**/*.md', 3, 4]",
        "kb.embedder.provider = 'word2vec'",
        "kb.ollama.host",
        "kb.agent.maxSteps = 0",
    ):
        assert name in message
    # One problem per setting, even when a list has several bad items.
    assert len(loaded.problems) == 6
    assert message.count("kb.include") == 1
    assert "using 800" in message


# --- fail safe: each source falls back to the one below it ------------------------------------


def test_bad_storage_in_the_workspace_keeps_initialization_storage() -> None:
    loaded = load_settings(
        *_layers(initialization={"storage": "/ext/store"}, workspace={"kb": {"storage": 5}})
    )
    assert loaded.settings.storage == "/ext/store"
    assert loaded.problems == [
        "kb.storage = 5 in workspace settings (Input should be a valid string): using '/ext/store'"
    ]


def test_kb_prefixed_dotted_keys_are_read_too() -> None:
    loaded = load_settings({"kb.storage": "/a"}, {"kb": {"search": {"limit": 3}}})
    assert loaded.settings.storage == "/a"
    assert loaded.settings.search.limit == 3


def test_bad_storage_in_the_workspace_keeps_the_environment_storage() -> None:
    environment = env_settings({"KB_STORAGE": "/env/store"})
    loaded = load_settings(*_layers(environment, workspace={"storage": {"path": "/x"}}))
    assert loaded.settings.storage == "/env/store"
    assert "kb.storage = {'path': '/x'} in workspace settings" in (loaded.message or "")


def test_bad_initialization_options_value_keeps_the_environment_value() -> None:
    environment = env_settings({"KB_STORAGE": "/env/store", "KB_SEARCH_THRESHOLD": "0.5"})
    loaded = load_settings(
        *_layers(environment, initialization={"storage": ["a"], "search": {"threshold": "high"}})
    )
    assert loaded.settings.storage == "/env/store"
    assert loaded.settings.search.threshold == 0.5
    assert len(loaded.problems) == 2
    assert all("in initializationOptions" in p for p in loaded.problems)


def test_bad_environment_value_falls_back_to_the_default() -> None:
    environment = env_settings({"KB_SEARCH_THRESHOLD": "high", "KB_AGENT_MAX_STEPS": "0"})
    loaded = load_settings(*_layers(environment))
    assert loaded.settings.search.threshold == 0.3
    assert loaded.settings.agent.max_steps == 7
    assert len(loaded.problems) == 2
    assert all("in the environment" in p for p in loaded.problems)


def test_a_good_value_above_a_bad_one_wins_without_a_message() -> None:
    environment = env_settings({"KB_SEARCH_THRESHOLD": "high"})
    loaded = load_settings(*_layers(environment, workspace={"search": {"threshold": 0.1}}))
    assert loaded.settings.search.threshold == 0.1
    # The environment's bad value is still reported: it would apply if the workspace's went.
    assert [p.split(" in ")[0] for p in loaded.problems] == ["kb.search.threshold = 'high'"]


def test_a_source_that_is_not_an_object_is_ignored_as_a_whole() -> None:
    environment = env_settings({"KB_STORAGE": "/env/store"})
    loaded = load_settings(
        *_layers(environment, initialization=["x"], workspace={"search": {"limit": 4}})
    )
    assert loaded.settings.storage == "/env/store"
    assert loaded.settings.search.limit == 4
    assert loaded.problems == [
        "settings in initializationOptions must be an object, got list: ignored"
    ]


def test_a_section_that_is_not_an_object_keeps_the_section_below() -> None:
    loaded = load_settings(
        *_layers(initialization={"ollama": {"model": "llama3.2"}}, workspace={"ollama": 5})
    )
    assert loaded.settings.ollama.model == "llama3.2"
    assert loaded.problems == [
        "kb.ollama = 5 in workspace settings (Input should be a valid dictionary or "
        "instance of OllamaSettings): ignored"
    ]


def test_the_same_bad_settings_give_the_same_message() -> None:
    """The server shows a message once; a repeated change must not make a new one."""
    layers = _layers(initialization={"storage": "/s"}, workspace={"storage": 5, "chunkSize": 1})
    assert load_settings(*layers).message == load_settings(*layers).message


def test_unset_values_leave_the_source_below_standing() -> None:
    """VS Code sends "" for an empty text box and null for an unset value."""
    environment = env_settings({"KB_STORAGE": "/env/store", "KB_CHROMA_URL": "http://c:8000"})
    loaded = load_settings(
        *_layers(
            environment,
            initialization={"storage": None},
            workspace={"storage": "", "chroma.url": "  ", "embedder": {"modelPath": ""}},
        )
    )
    assert loaded.problems == []
    assert loaded.settings.storage == "/env/store"
    assert loaded.settings.chroma.url == "http://c:8000"
    assert loaded.settings.embedder.model_path is None


def test_blank_text_is_unset_when_built_directly() -> None:
    assert Settings.model_validate({"storage": " ", "server": {"python": ""}}).storage is None


def test_unknown_keys_are_ignored() -> None:
    loaded = load_settings({"server": {"python": "/usr/bin/python3"}, "futureThing": 1})
    assert loaded.problems == []
    assert loaded.settings.server.python == "/usr/bin/python3"


def test_environment() -> None:
    raw = env_settings({"KB_STORAGE": "/tmp/s", "OLLAMA_HOST": "h:1", "KB_OLLAMA_MODEL": "m"})
    settings = load_settings(raw).settings
    assert settings.storage == "/tmp/s"
    assert settings.ollama.host == "http://h:1"
    assert settings.ollama.model == "m"
    assert env_settings({"OLLAMA_HOST": "a:1", "KB_OLLAMA_HOST": "b:2"})["ollama"]["host"] == "b:2"
    assert env_settings({"KB_EMBEDDER": "ollama"}) == {"embedder": {"provider": "ollama"}}


def test_changed_settings_names_each_difference() -> None:
    old = Settings()
    new = load_settings({"ollama": {"timeout": 7}, "search.threshold": 0.5}).settings
    assert changed_settings(old, new) == [
        "kb.search.threshold: 0.3 → 0.5",
        "kb.ollama.timeout: 120.0 → 7.0",
    ]
    assert changed_settings(new, new) == []


def test_a_team_collection_is_a_name_chroma_takes() -> None:
    """`kb.chroma.collection` (docs/team-index.md): a name Chroma refuses is a settings
    message, and the value below it stands."""
    environment = env_settings({"KB_CHROMA_URL": "http://c:8000", "KB_CHROMA_COLLECTION": "team"})
    assert environment["chroma"] == {"url": "http://c:8000", "collection": "team"}
    loaded = load_settings(*_layers(environment, workspace={"chroma.collection": "our notes!"}))
    assert loaded.settings.chroma.collection == "team"
    (problem,) = loaded.problems
    assert problem.startswith("kb.chroma.collection = 'our notes!' in workspace settings (")
    assert "Chroma's rule" in problem
    for name in ("ab", "-team", "team-", "a..b", "x" * 513):
        assert load_settings({"chroma.collection": name}).problems, name
    for name in ("abc", "team-notes", "kb.wiki_2", "x" * 512):
        assert load_settings({"chroma.collection": name}).settings.chroma.collection == name
