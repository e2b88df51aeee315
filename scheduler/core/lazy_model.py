""":class:`LazyModel`: a pydantic model built when first used, not when imported."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class LazyModel(BaseModel):
    """A pydantic model whose validator and serializer are built on first use
    (``defer_build``): for the views' models, which every reading command imports and each
    uses a few of (issue 32: ``campaign status`` built 55 models at start-up, used 20).
    Fields, defaults and validation are those of ``BaseModel``."""

    model_config = ConfigDict(defer_build=True)
