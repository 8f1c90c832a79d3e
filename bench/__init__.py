"""Benchmarks of the reference solutions and the grader: `python -m bench [NAME...]`."""
