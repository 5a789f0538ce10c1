"""A stand-in for the few calls of Chroma's HTTP API a team index makes
(`kb_lsp/engine/store/shared.py`), as an httpx transport handler: collections in memory,
answering as Chroma 1.x does. The real server is `tests/e2e/test_team_index.py`'s."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import httpx
import numpy as np


class FakeChroma:
    """Collections in memory, answering as Chroma 1.x does (ids not found are left out)."""

    def __init__(self, *, max_batch: int = 100, base64_ok: bool = True) -> None:
        self.max_batch = max_batch
        self.base64_ok = base64_ok
        self.collections: dict[str, dict[str, Any]] = {}  # id -> name, metadata, records
        self.requests: list[tuple[str, str, Any]] = []
        self.down = False  # refuse connections, as a server that is not running

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if self.down:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        return self._answer(request)

    def hashes(self) -> set[str]:
        """Every text hash the server holds, in every collection."""
        return {h for collection in self.collections.values() for h in collection["records"]}

    def _answer(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.method, request.url.path, body))
        path = request.url.path
        if path == "/api/v2/pre-flight-checks":
            checks = {"max_batch_size": self.max_batch, "supports_base64_encoding": self.base64_ok}
            return httpx.Response(200, json=checks)
        if path.endswith("/collections") and request.method == "POST":
            return httpx.Response(200, json=self._get_or_create(body))
        collection_id, action = path.rsplit("/", 2)[-2:]
        collection = self.collections.get(collection_id)
        if collection is None:
            return httpx.Response(404, json={"error": "NotFound", "message": "no such collection"})
        records: dict[str, list[float]] = collection["records"]
        if action == "count":
            return httpx.Response(200, json=len(records))
        if action == "upsert":
            for digest, vector in zip(body["ids"], body["embeddings"], strict=True):
                records[digest] = decoded(vector)
            return httpx.Response(200, json={})
        found = [digest for digest in body["ids"] if digest in records]
        embeddings = [records[d] for d in found] if "embeddings" in body["include"] else None
        return httpx.Response(200, json={"ids": found, "embeddings": embeddings})

    def _get_or_create(self, body: dict[str, Any]) -> dict[str, Any]:
        for collection_id, collection in self.collections.items():
            if collection["name"] == body["name"]:
                return {"id": collection_id, **collection}
        collection_id = str(uuid.uuid4())
        self.collections[collection_id] = {
            "name": body["name"],
            "metadata": body["metadata"],
            "records": {},
        }
        return {"id": collection_id, **self.collections[collection_id]}

    def calls(self, action: str) -> int:
        return sum(1 for _, path, _ in self.requests if path.endswith("/" + action))


def decoded(vector: Any) -> list[float]:
    if isinstance(vector, str):
        return np.frombuffer(base64.b64decode(vector), dtype="<f4").tolist()
    return [float(x) for x in vector]
