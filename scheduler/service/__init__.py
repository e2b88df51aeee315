"""The Messaging Session Service: request, response and event models, and the async client."""

from __future__ import annotations
