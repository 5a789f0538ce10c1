"""Which files belong to the knowledge base, reading them confined, watching them."""
