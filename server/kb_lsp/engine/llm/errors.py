"""Typed errors of the model clients; `str(error)` is a message a person can act on.

`ModelUnavailable` and its subclasses mean that no model can answer at all (nothing at
the address, the model not there, a server that speaks another API, a refused key): the
agent then answers without one (mode `fallback`). Every other `LlmError` happened while
a model was answering (a timeout, HTTP 500) and ends that request with its message.
"""

from __future__ import annotations

from kb_lsp.errors import Cancelled, Failed


class LlmError(Failed):
    """The model could not answer."""

    def __init__(self, message: str, *, host: str = "", model: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.host = host
        self.model = model


class ModelUnavailable(LlmError):
    """No model can answer with the current settings (the fix is in the message)."""


class LlmUnreachable(ModelUnavailable):
    """Nothing answers at the configured address."""


class ModelNotFound(ModelUnavailable):
    """The server runs but does not have the model."""


class WrongApi(ModelUnavailable):
    """The server answers, but not the API of the configured provider."""


class AuthFailed(ModelUnavailable):
    """The server refused the API key (or its absence)."""


class ServerHung(ModelUnavailable):
    """The server accepted the connection but did not say what the model can do."""


class ContextTooLong(LlmError):
    """The prompt does not fit the model's context window."""


class LlmTimeout(LlmError):
    """The model was silent for the configured timeout."""


class LlmCancelled(Cancelled, LlmError):
    """The caller's cancel event was set; the stream was closed."""


class EmptyAnswer(LlmError):
    """The model's reply had no text, twice."""
