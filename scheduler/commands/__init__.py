"""Command-line command groups; each module defines ``register(app)`` and is found by cli.py.

Modules import heavy libraries (pandas, FastAPI, SQLAlchemy) inside their command
functions, so ``campaign --help`` stays fast.
"""

from __future__ import annotations
