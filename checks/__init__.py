"""Checkers over the spec and the engine, and the command line."""
