# ruff: noqa: E501 -- a field's description is one JSON string, as long as it is
"""Generated from config.py and protocol.py by `python -m kb_lsp.codegen`: do not edit.

What `kb status` needs of the settings and the status payloads without loading pydantic
(`quick.py`; the generator, `codegen/quick.py`, says what each table holds).
"""

import json
from typing import Any

_DATA: dict[str, Any] = json.loads(
    r"""
{
 "settings": {
  "include": [
   "**/*.md",
   "**/*.markdown"
  ],
  "exclude": [],
  "respect_gitignore": true,
  "max_file_size": 2097152,
  "chunk_size": 800,
  "chunk_overlap": 200,
  "storage": null,
  "reconcile_seconds": 300.0,
  "debounce_ms": 300,
  "embedder": {
   "provider": "minilm",
   "model": "nomic-embed-text",
   "model_path": null,
   "batch_size": 32
  },
  "search": {
   "mode": "hybrid",
   "limit": 10,
   "threshold": 0.3
  },
  "ollama": {
   "host": "http://127.0.0.1:11434",
   "model": "qwen2.5:7b",
   "timeout": 120.0,
   "num_ctx": 8192,
   "keep_alive": "10m"
  },
  "llm": {
   "provider": "ollama",
   "base_url": null,
   "api_key_env": null,
   "model": null,
   "mode": "auto",
   "max_tokens": 0,
   "timeout": 0.0,
   "context_size": 0
  },
  "agent": {
   "max_steps": 7
  },
  "metadata": {
   "schema_file": null,
   "extract": true
  },
  "chroma": {
   "url": null,
   "collection": null
  },
  "server": {
   "python": null
  },
  "log": {
   "level": "info"
  }
 },
 "names": {
  "include": [
   "include"
  ],
  "exclude": [
   "exclude"
  ],
  "respectGitignore": [
   "respect_gitignore"
  ],
  "maxFileSize": [
   "max_file_size"
  ],
  "chunkSize": [
   "chunk_size"
  ],
  "chunkOverlap": [
   "chunk_overlap"
  ],
  "storage": [
   "storage"
  ],
  "reconcileSeconds": [
   "reconcile_seconds"
  ],
  "debounceMs": [
   "debounce_ms"
  ],
  "embedder.provider": [
   "embedder",
   "provider"
  ],
  "embedder.model": [
   "embedder",
   "model"
  ],
  "embedder.modelPath": [
   "embedder",
   "model_path"
  ],
  "embedder.batchSize": [
   "embedder",
   "batch_size"
  ],
  "search.mode": [
   "search",
   "mode"
  ],
  "search.limit": [
   "search",
   "limit"
  ],
  "search.threshold": [
   "search",
   "threshold"
  ],
  "ollama.host": [
   "ollama",
   "host"
  ],
  "ollama.model": [
   "ollama",
   "model"
  ],
  "ollama.timeout": [
   "ollama",
   "timeout"
  ],
  "ollama.numCtx": [
   "ollama",
   "num_ctx"
  ],
  "ollama.keepAlive": [
   "ollama",
   "keep_alive"
  ],
  "llm.provider": [
   "llm",
   "provider"
  ],
  "llm.baseUrl": [
   "llm",
   "base_url"
  ],
  "llm.apiKeyEnv": [
   "llm",
   "api_key_env"
  ],
  "llm.model": [
   "llm",
   "model"
  ],
  "llm.mode": [
   "llm",
   "mode"
  ],
  "llm.maxTokens": [
   "llm",
   "max_tokens"
  ],
  "llm.timeout": [
   "llm",
   "timeout"
  ],
  "llm.contextSize": [
   "llm",
   "context_size"
  ],
  "agent.maxSteps": [
   "agent",
   "max_steps"
  ],
  "metadata.schemaFile": [
   "metadata",
   "schema_file"
  ],
  "metadata.extract": [
   "metadata",
   "extract"
  ],
  "chroma.url": [
   "chroma",
   "url"
  ],
  "chroma.collection": [
   "chroma",
   "collection"
  ],
  "server.python": [
   "server",
   "python"
  ],
  "log.level": [
   "log",
   "level"
  ]
 },
 "env": {
  "OLLAMA_HOST": "ollama.host",
  "KB_STORAGE": "storage",
  "KB_EMBEDDER": "embedder.provider",
  "KB_EMBEDDER_MODEL_PATH": "embedder.modelPath",
  "KB_SEARCH_THRESHOLD": "search.threshold",
  "KB_OLLAMA_HOST": "ollama.host",
  "KB_OLLAMA_MODEL": "ollama.model",
  "KB_LLM_PROVIDER": "llm.provider",
  "KB_LLM_BASE_URL": "llm.baseUrl",
  "KB_LLM_MODEL": "llm.model",
  "KB_LLM_MODE": "llm.mode",
  "KB_AGENT_MAX_STEPS": "agent.maxSteps",
  "KB_CHROMA_URL": "chroma.url",
  "KB_CHROMA_COLLECTION": "chroma.collection",
  "KB_LOG_LEVEL": "log.level"
 },
 "choices": {
  "embedder.provider": [
   "minilm",
   "ollama"
  ],
  "search.mode": [
   "hybrid",
   "semantic",
   "keyword"
  ],
  "llm.provider": [
   "ollama",
   "openai"
  ],
  "llm.mode": [
   "auto",
   "agent",
   "grounded"
  ],
  "log.level": [
   "debug",
   "info",
   "warning",
   "error"
  ]
 },
 "wire": {
  "IndexStatus": [
   [
    "state",
    "<required>"
   ],
   [
    "files",
    "<required>"
   ],
   [
    "chunks",
    "<required>"
   ],
   [
    "pending",
    0
   ],
   [
    "embedder",
    "<required>"
   ],
   [
    "store",
    "<required>"
   ],
   [
    "llm",
    "<required>"
   ],
   [
    "readOnly",
    false
   ],
   [
    "roots",
    []
   ],
   [
    "skipped",
    []
   ],
   [
    "problems",
    []
   ],
   [
    "message",
    null
   ],
   [
    "progress",
    null
   ],
   [
    "keywordComplete",
    true
   ],
   [
    "vectorsReady",
    1.0
   ],
   [
    "paused",
    false
   ],
   [
    "metadata",
    null
   ]
  ],
  "LlmStatus": [
   [
    "host",
    "<required>"
   ],
   [
    "model",
    "<required>"
   ],
   [
    "reachable",
    null
   ],
   [
    "provider",
    "ollama"
   ],
   [
    "message",
    null
   ],
   [
    "tools",
    null
   ]
  ],
  "SkippedFile": [
   [
    "path",
    "<required>"
   ],
   [
    "reason",
    "<required>"
   ]
  ],
  "FileProblem": [
   [
    "path",
    "<required>"
   ],
   [
    "line",
    "<required>"
   ],
   [
    "message",
    "<required>"
   ]
  ],
  "MetadataStatus": [
   [
    "schemaFile",
    null
   ],
   [
    "model",
    null
   ],
   [
    "extracted",
    0
   ],
   [
    "total",
    0
   ],
   [
    "message",
    null
   ]
  ],
  "SearchResponse": [
   [
    "query",
    "<required>"
   ],
   [
    "results",
    "<required>"
   ],
   [
    "index",
    "<required>"
   ],
   [
    "didYouMean",
    null
   ],
   [
    "warnings",
    []
   ]
  ],
  "SearchHit": [
   [
    "n",
    "<required>"
   ],
   [
    "uri",
    "<required>"
   ],
   [
    "path",
    "<required>"
   ],
   [
    "root",
    "<required>"
   ],
   [
    "title",
    "<required>"
   ],
   [
    "label",
    "<required>"
   ],
   [
    "score",
    "<required>"
   ],
   [
    "snippet",
    "<required>"
   ],
   [
    "heading",
    "<required>"
   ],
   [
    "range",
    "<required>"
   ],
   [
    "meta",
    null
   ],
   [
    "marks",
    []
   ]
  ],
  "HitMeta": [
   [
    "tags",
    []
   ],
   [
    "status",
    null
   ],
   [
    "modified",
    null
   ],
   [
    "extracted",
    {}
   ],
   [
    "extractedBy",
    null
   ]
  ],
  "ExtractedValue": [
   [
    "value",
    "<required>"
   ],
   [
    "evidence",
    "<required>"
   ],
   [
    "range",
    "<required>"
   ],
   [
    "start",
    "<required>"
   ],
   [
    "end",
    "<required>"
   ]
  ],
  "Range": [
   [
    "start",
    "<required>"
   ],
   [
    "end",
    "<required>"
   ]
  ],
  "Position": [
   [
    "line",
    "<required>"
   ],
   [
    "character",
    "<required>"
   ]
  ],
  "SchemaResponse": [
   [
    "files",
    "<required>"
   ],
   [
    "fields",
    "<required>"
   ],
   [
    "notes",
    null
   ]
  ],
  "SchemaField": [
   [
    "name",
    "<required>"
   ],
   [
    "types",
    "<required>"
   ],
   [
    "files",
    "<required>"
   ],
   [
    "top",
    []
   ],
   [
    "extracted",
    0
   ],
   [
    "models",
    []
   ]
  ],
  "SchemaValue": [
   [
    "value",
    "<required>"
   ],
   [
    "count",
    "<required>"
   ]
  ],
  "FieldExtraction": [
   [
    "model",
    "<required>"
   ],
   [
    "kept",
    "<required>"
   ],
   [
    "rejected",
    "<required>"
   ]
  ]
 },
 "python": {
  "IndexStatus": [
   "state",
   "files",
   "chunks",
   "pending",
   "embedder",
   "store",
   "llm",
   "read_only",
   "roots",
   "skipped",
   "problems",
   "message",
   "progress",
   "keyword_complete",
   "vectors_ready",
   "paused",
   "metadata"
  ],
  "LlmStatus": [
   "host",
   "model",
   "reachable",
   "provider",
   "message",
   "tools"
  ],
  "SkippedFile": [
   "path",
   "reason"
  ],
  "FileProblem": [
   "path",
   "line",
   "message"
  ],
  "MetadataStatus": [
   "schema_file",
   "model",
   "extracted",
   "total",
   "message"
  ],
  "SearchResponse": [
   "query",
   "results",
   "index",
   "did_you_mean",
   "warnings"
  ],
  "SearchHit": [
   "n",
   "uri",
   "path",
   "root",
   "title",
   "label",
   "score",
   "snippet",
   "heading",
   "range",
   "meta",
   "marks"
  ],
  "HitMeta": [
   "tags",
   "status",
   "modified",
   "extracted",
   "extracted_by"
  ],
  "ExtractedValue": [
   "value",
   "evidence",
   "range",
   "start",
   "end"
  ],
  "Range": [
   "start",
   "end"
  ],
  "Position": [
   "line",
   "character"
  ],
  "SchemaResponse": [
   "files",
   "fields",
   "notes"
  ],
  "SchemaField": [
   "name",
   "types",
   "files",
   "top",
   "extracted",
   "models"
  ],
  "SchemaValue": [
   "value",
   "count"
  ],
  "FieldExtraction": [
   "model",
   "kept",
   "rejected"
  ]
 },
 "required": "<required>",
 "maxLimit": 100,
 "maxQueryChars": 2000,
 "methods": {
  "search": "kb/search",
  "status": "kb/status",
  "schema": "kb/schema"
 },
 "commands": {
  "search": "kb/search",
  "ask": "kb/ask",
  "status": "kb/status",
  "index": "kb/reindex",
  "schema": "kb/schema"
 },
 "errorCodes": {
  "invalidParams": -32602,
  "unavailable": -32000,
  "requestCancelled": -32800,
  "failed": -32001
 },
 "params": {
  "search": {
   "query": {
    "kind": "str",
    "default": null,
    "required": true,
    "help": "What to look for: plain words, a question, or exact terms (identifiers, error codes, names)."
   },
   "limit": {
    "kind": "int",
    "min": 1,
    "max": 100,
    "default": 10,
    "required": false,
    "help": "At most this many files."
   },
   "paths": {
    "kind": "list",
    "default": null,
    "required": false,
    "help": "Only files whose workspace path matches one of these globs (gitignore style), e.g. ['runbooks/**', 'payments/*.md']."
   },
   "mode": {
    "kind": "choice",
    "choices": [
     "hybrid",
     "semantic",
     "keyword"
    ],
    "default": "hybrid",
    "required": false,
    "help": "'hybrid': meaning and words (best in general); 'semantic': meaning only; 'keyword': exact words (BM25)."
   },
   "filter": {
    "kind": "str",
    "default": null,
    "required": false,
    "help": "Keep only files whose metadata match, e.g. 'tag:runbook -status:draft modified>2026-10-01 folder:payments'; the schema tool lists the fields and their values."
   }
  },
  "ask": {
   "question": {
    "kind": "str",
    "default": null,
    "required": true,
    "help": "The question."
   },
   "file": {
    "kind": "str",
    "default": null,
    "required": false,
    "help": "Focus on this file (workspace-relative path) only."
   },
   "n": {
    "kind": "int",
    "min": 1,
    "max": 100,
    "default": null,
    "required": false,
    "help": "Or: focus on result n of your last search."
   },
   "conversation_id": {
    "kind": "str",
    "default": null,
    "required": false,
    "help": null
   }
  },
  "status": {
   "probe": {
    "kind": "bool",
    "default": false,
    "required": false,
    "help": "Ask the model server again now (Retry, changed model settings) rather than answer from the last check; the answer waits for it, a few seconds at most."
   }
  },
  "index": {
   "full": {
    "kind": "bool",
    "default": false,
    "required": false,
    "help": null
   }
  },
  "schema": {
   "extracted": {
    "kind": "bool",
    "default": false,
    "required": false,
    "help": "Also list every value a model extracted from each note: kept (with the note's words it was read from) or rejected (with the reason)."
   }
  }
 }
}
"""
)
SETTINGS: dict[str, Any] = _DATA["settings"]
NAMES: dict[str, list[str]] = _DATA["names"]
ENV: dict[str, str] = _DATA["env"]
CHOICES: dict[str, list[str]] = _DATA["choices"]
WIRE: dict[str, list[list[Any]]] = _DATA["wire"]
PYTHON: dict[str, list[str]] = _DATA["python"]
REQUIRED: str = _DATA["required"]
MAX_LIMIT: int = _DATA["maxLimit"]
MAX_QUERY_CHARS: int = _DATA["maxQueryChars"]
METHODS: dict[str, str] = _DATA["methods"]
COMMANDS: dict[str, str] = _DATA["commands"]
ERROR_CODES: dict[str, int] = _DATA["errorCodes"]
PARAMS: dict[str, dict[str, dict[str, Any]]] = _DATA["params"]
