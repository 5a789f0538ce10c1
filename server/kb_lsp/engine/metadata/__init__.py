"""Metadata of the knowledge base's files: extraction at index time (front matter, tags,
folder, words, links), storage in SQLite, the filter language, and the schema.

Modules: `frontmatter` (safe YAML), `inline` (tags and links in the body), `extract`
(one file's `FileMetadata`), `tables` (SQLite rows), `filters` (the language's parser),
`query` (a filter as SQL), `schema` (the `kb/schema` answer).
"""

from kb_lsp.engine.metadata.extract import FileMetadata, extract_metadata
from kb_lsp.engine.metadata.filters import FilterError, Node, parse_filter, split_query

__all__ = ["FileMetadata", "FilterError", "Node", "extract_metadata", "parse_filter", "split_query"]
