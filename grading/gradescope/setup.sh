#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (with network).
# Written by `python grader.py bundle @NAME@ --gradescope`.
set -euo pipefail
root="${AUTOGRADER_ROOT:-/autograder}"
cd "$root/source"
export PATH="$HOME/.local/bin:$HOME/.cargo/bin:$PATH"
if ! command -v uv >/dev/null 2>&1; then
  # pip where it may install (Ubuntu 22.04's Python), else past PEP 668's guard (24.04), else
  # uv's own standalone installer.
  python3 -m pip install --quiet uv 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages uv 2>/dev/null \
    || curl -LsSf https://astral.sh/uv/install.sh | sh
fi
# The project needs Python 3.11+; Ubuntu 22.04 ships 3.10, so uv fetches one if need be.
uv python find '>=3.11' >/dev/null 2>&1 || uv python install 3.12
# Only what the grader and this exercise import (the project's other libraries are left out).
uv sync --frozen --no-dev @NOT_NEEDED@
# Prove the image grades: collect the checks in a sandboxed child, as every grading does (the
# list is cached for every submission after). A failure here fails the build, loudly.
uv run --no-sync python -c "from grading import catalog, collect
print(len(collect.collect(catalog.find('@NAME@'))), 'checks collected')"
echo "autograder for @NAME@ is ready"
