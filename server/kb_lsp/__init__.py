"""kb-lsp: a knowledge base for the Markdown in a workspace, served over LSP."""

__version__ = "0.1.0"
