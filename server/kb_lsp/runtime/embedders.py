"""Which embedder a knowledge base gets: the one `kb.embedder.*` configures, unless the
process says otherwise.

`KB_EMBEDDER_FACTORY=module:callable` (environment only, never a workspace setting: it
imports code) names a zero-argument callable returning an `Embedder`. The test suite
uses it to run the real server with its deterministic hashing embedder, which needs no
model files; a program embedding kb-lsp may use it for an embedder of its own. Nothing
here knows about the tests.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Mapping

from kb_lsp.engine.embed.embeddings import Embedder

log = logging.getLogger(__name__)

FACTORY_VARIABLE = "KB_EMBEDDER_FACTORY"


class EmbedderFactoryError(RuntimeError):
    """`KB_EMBEDDER_FACTORY` names something that cannot make an embedder."""


def embedder_from_environment(environ: Mapping[str, str] | None = None) -> Embedder | None:
    """The embedder `KB_EMBEDDER_FACTORY` names, or None when it is not set."""
    environ = os.environ if environ is None else environ
    spec = environ.get(FACTORY_VARIABLE, "").strip()
    if not spec:
        return None
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise EmbedderFactoryError(
            f"{FACTORY_VARIABLE}={spec!r}: give module:callable, e.g. mypackage.embed:make"
        )
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
        embedder: Embedder = factory()
    except Exception as err:
        raise EmbedderFactoryError(f"{FACTORY_VARIABLE}={spec!r}: {err}") from err
    log.warning("using the embedder %s from %s", embedder.identity, FACTORY_VARIABLE)
    return embedder
