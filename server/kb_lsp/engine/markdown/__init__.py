"""Markdown to a document: its title, front matter, sections and heading-aware chunks
(`document`), with chunk boundaries chosen by `chunker`."""
