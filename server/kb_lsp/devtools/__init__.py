"""Tools for trying and testing kb-lsp, not part of the language server: nothing in the
engine, the runtime or the front ends imports this package."""
