"""End-to-end tests: the real server over stdio."""
