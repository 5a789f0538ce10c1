"""Metadata of the knowledge base's files: extraction at index time (front matter, tags,
folder, words, links), storage in SQLite, the filter language, and the schema.

Modules: `frontmatter` (safe YAML), `inline` (tags and links in the body), `extract`
(one file's `FileMetadata`), `tables` (SQLite rows), `filters` (the language's parser),
`query` (a filter as SQL), `schema` (the `kb/schema` answer).

The package itself imports nothing: the store's `db.py` reads `tables`, and a one-shot
keyword search must not load YAML and markdown-it through `extract` to get it.
"""
