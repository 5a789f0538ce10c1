"""Helpers several test modules share (test modules never import each other)."""
