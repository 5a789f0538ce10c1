"""kb-lsp benchmarks and the retrieval-quality evaluation: `python -m bench --help`."""
