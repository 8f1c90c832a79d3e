"""Mutation testing of the references (see `__main__.py`)."""
