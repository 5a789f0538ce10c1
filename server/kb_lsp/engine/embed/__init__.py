"""Embeddings: the embedder protocol and its providers, and the int8 copy of the model."""
