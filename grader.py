#!/usr/bin/env python3
"""Grade a kata: `python grader.py NAME` (see `python grader.py --help`)."""

import sys

if sys.version_info < (3, 11):  # noqa: UP036 - a bare older interpreter gets a clear line
    sys.exit(f"grader: Python 3.11 or newer is needed (this is {sys.version.split()[0]}); "
             "`uv run grader.py ...` picks one for you")

from grading.commands import main

if __name__ == "__main__":
    sys.exit(main())
