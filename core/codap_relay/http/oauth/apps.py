"""The plugin's connected apps: ``GET /api/sessions/{code}/grants`` and Disconnect (``DELETE …/{grant}``). Both
need the session's browser token in every mode (REQUIRE_BROWSER_TOKEN=false included): they are the person's."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ...codes import normalise_code
from ...errors import BadInput
from ...relay import Relay
from ..context import bearer_token, client_ip, relay_of


async def _identity(request: Request) -> tuple[Relay, str]:
    relay = relay_of(request)
    code = normalise_code(request.path_params["code"])
    await relay.sessions.for_plugin(code, bearer_token(request), client=client_ip(request), strict=True)
    return relay, await relay.grants.identity_of(code)


async def list_grants(request: Request) -> Response:
    relay, identity = await _identity(request)
    grants = await relay.grants.grants_of(identity)
    return JSONResponse(
        {
            "persistent": not identity.startswith("code:"),
            "apps": [
                {"id": g.id, "app": g.client_name, "verified": g.verified, "connectedAt": g.created_at} for g in grants
            ],
        }
    )


async def delete_grant(request: Request) -> Response:
    relay, identity = await _identity(request)
    grant_id = request.path_params["grant"]
    mine = {g.id for g in await relay.grants.grants_of(identity)}
    if grant_id not in mine:
        raise BadInput("This plugin has no connected app with that id; reload the list.", field="grant")
    await relay.grants.revoke_grant(grant_id)
    return JSONResponse({"id": grant_id, "status": "disconnected"})
