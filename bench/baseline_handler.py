"""The cold-start baseline: the smallest Starlette app behind Mangum, as a Lambda handler module."""

from mangum import Mangum
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


async def ok(request: Request) -> Response:
    return JSONResponse({"ok": True})


handler = Mangum(Starlette(routes=[Route("/", ok)]), lifespan="off")
