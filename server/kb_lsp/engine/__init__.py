"""The engine: the knowledge base and everything it is made of (docs/design.md,
"Layers"). It imports nothing above it and never writes to stdout."""
