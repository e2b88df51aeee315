"""Catalog product and asynchronous command endpoints (``/api/v1/catalog``, ``/commands``)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse

from scheduler.sandbox.bodies import parse_body
from scheduler.sandbox.catalog import CatalogDesk
from scheduler.sandbox.routes_sessions import sandbox_of
from scheduler.service.catalog_models import (
    CATALOG_PRODUCT_PATH,
    COMMANDS_PATH,
    CatalogProductBody,
)

router = APIRouter()


def catalog_of(request: Request) -> CatalogDesk:
    """The catalog desk of the sandbox serving ``request``."""
    desk: CatalogDesk = request.app.state.catalog
    return desk


@router.post(CATALOG_PRODUCT_PATH)
async def product_get(request: Request) -> JSONResponse:
    """One product now (``async`` false), or a queued command (``async`` true)."""
    body, _ = await parse_body(request, CatalogProductBody)
    sandbox_of(request).sending_session(body.sessionId)
    desk = catalog_of(request)
    if body.async_:
        return JSONResponse(desk.queue_product(body.business_jid, body.product_id))
    product = desk.product(body.business_jid, body.product_id)
    return JSONResponse({"success": True, "data": product})


@router.get(COMMANDS_PATH + "/{command_id}")
async def command(request: Request, command_id: str) -> JSONResponse:
    """Where a command stands: ``queued``, ``running``, ``done`` or ``failed``."""
    return JSONResponse({"success": True, "data": catalog_of(request).command(command_id)})
