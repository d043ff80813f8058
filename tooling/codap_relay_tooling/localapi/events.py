"""The REST API proxy event API Gateway hands a Lambda function, and the way it reads the function's answer.

The event has the shape ``sam local generate-event apigateway aws-proxy`` prints (tests compare the two): the
path without the stage; ``requestContext.path`` with it; single- and multi-value headers and query parameters;
``identity.sourceIp`` from the TCP peer; the body as text, or base64 when its Content-Type is one of the API's
binary media types. The answer's ``headers`` and ``multiValueHeaders`` are merged (for a name in both, the
multi-value list wins, as API Gateway documents); a base64 body is decoded only when the request's Accept
header names a binary media type, otherwise the client gets the base64 text, as from API Gateway.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import gzip
import json
import secrets
import time
import uuid
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from .routing import Match

API_ID = "localapi01"
HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"})


@dataclass(frozen=True)
class IncomingRequest:
    """An HTTP request as the gateway received it (header names lower case, as ASGI gives them)."""

    method: str
    path: str  # after the stage (or the custom domain's base path, which stays in the event's path)
    public_path: str  # as the client sent it: /<stage>/... or /<base path>/...
    query_string: bytes
    headers: Sequence[tuple[str, str]]
    body: bytes
    source_ip: str
    scheme: str
    port: int


@dataclass(frozen=True)
class GatewayAnswer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


class MalformedResponse(ValueError):
    """The function's answer is not a valid proxy response; API Gateway answers 502."""


def media_type_matches(content_type: str | None, patterns: Iterable[str]) -> bool:
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return any(fnmatch.fnmatchcase(media, p.lower()) for p in patterns)


def trace_id(now: float) -> str:
    return f"Root=1-{int(now):08x}-{secrets.token_hex(12)}"


def _request_time(now: float) -> str:
    return time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now))


def gateway_headers(request: IncomingRequest, now: float) -> list[tuple[str, str]]:
    """The request's headers as the integration sees them: hop-by-hop ones gone, API Gateway's own added."""
    headers = [(k, v) for k, v in request.headers if k not in HOP_BY_HOP and k != "x-amzn-trace-id"]
    forwarded = [v for k, v in headers if k == "x-forwarded-for"]
    headers = [(k, v) for k, v in headers if k not in ("x-forwarded-for", "x-forwarded-proto", "x-forwarded-port")]
    headers += [
        ("x-amzn-trace-id", trace_id(now)),
        ("x-forwarded-for", ", ".join([*forwarded, request.source_ip])),
        ("x-forwarded-port", str(request.port)),
        ("x-forwarded-proto", request.scheme),
    ]
    return headers


def caller_identity(source_ip: str, user_agent: str | None) -> dict[str, Any]:
    """``requestContext.identity`` as API Gateway fills it for an unauthenticated caller (REST and WebSocket)."""
    unset = (
        "accessKey",
        "accountId",
        "caller",
        "cognitoAuthenticationProvider",
        "cognitoAuthenticationType",
        "cognitoIdentityId",
        "cognitoIdentityPoolId",
        "principalOrgId",
        "user",
        "userArn",
    )
    return {**dict.fromkeys(unset), "sourceIp": source_ip, "userAgent": user_agent}


def request_context(request: IncomingRequest, match: Match, stage: str, request_id: str, now: float) -> dict[str, Any]:
    headers = dict(request.headers)
    host = headers.get("host", "")
    return {
        "accountId": "123456789012",
        "apiId": API_ID,
        "domainName": host,
        "domainPrefix": host.split(".", 1)[0],
        "extendedRequestId": f"{request_id[:8]}-ext",
        "httpMethod": request.method,
        "identity": caller_identity(request.source_ip, headers.get("user-agent")),
        "path": request.public_path,
        "protocol": "HTTP/1.1",
        "requestId": request_id,
        "requestTime": _request_time(now),
        "requestTimeEpoch": int(now * 1000),
        "resourceId": f"{zlib.crc32(match.route.path.encode()) % 10**6:06d}",
        "resourcePath": match.route.path,
        "stage": stage,
    }


def build_event(
    request: IncomingRequest,
    match: Match,
    *,
    stage: str,
    binary_media_types: Sequence[str],
    request_id: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    now = time.time() if now is None else now
    request_id = request_id or str(uuid.uuid4())
    headers = gateway_headers(request, now)
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, value in headers:
        single[name] = value  # the last value of a repeated header, as in API Gateway's `headers`
        multi.setdefault(name, []).append(value)
    query = parse_qsl(request.query_string.decode("latin-1"), keep_blank_values=True)
    query_single: dict[str, str] = {}
    query_multi: dict[str, list[str]] = {}
    for name, value in query:
        query_single[name] = value
        query_multi.setdefault(name, []).append(value)
    binary = media_type_matches(single.get("content-type"), binary_media_types)
    body: str | None
    if not request.body:
        body = None
    elif binary:
        body = base64.b64encode(request.body).decode("ascii")
    else:
        # API Gateway passes a text body as a string; bytes that are not UTF-8 cannot travel in it unchanged.
        body = request.body.decode("utf-8", errors="replace")
    return {
        "resource": match.route.path,
        "path": request.path,
        "httpMethod": request.method,
        "headers": single or None,
        "multiValueHeaders": multi or None,
        "queryStringParameters": query_single or None,
        "multiValueQueryStringParameters": query_multi or None,
        "pathParameters": match.path_parameters or None,
        "stageVariables": None,
        "requestContext": request_context(request, match, stage, request_id, now),
        "body": body,
        "isBase64Encoded": binary and bool(request.body),
    }


def encode_payload(value: Any) -> bytes:
    """Serialised as the Lambda Python 3.12 runtime and API Gateway do: raw UTF-8, JSON's own escapes only."""
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def read_answer(result: Any, *, accept: str | None, binary_media_types: Sequence[str]) -> GatewayAnswer:
    """Turn a Lambda proxy response into the HTTP response API Gateway sends (MalformedResponse: 502)."""
    if not isinstance(result, dict):
        raise MalformedResponse("the function did not return a JSON object")
    status = result.get("statusCode")
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise MalformedResponse(f"statusCode {status!r} is not an HTTP status")
    merged: dict[str, list[str]] = {}
    for name, value in (result.get("headers") or {}).items():
        merged[str(name)] = [str(value)]
    for name, values in (result.get("multiValueHeaders") or {}).items():
        if not isinstance(values, list):
            raise MalformedResponse(f"multiValueHeaders[{name!r}] is not a list")
        merged[str(name)] = [str(v) for v in values]
    raw = result.get("body")
    if raw is None:
        body = b""
    elif not isinstance(raw, str):
        raise MalformedResponse("body is not a string")
    elif result.get("isBase64Encoded") and _accepts_binary(accept, binary_media_types):
        try:
            body = base64.b64decode(raw, validate=True)
        except binascii.Error as exc:
            raise MalformedResponse("isBase64Encoded body is not base64") from exc
    else:
        body = raw.encode("utf-8")
    headers = [(name, value) for name, values in merged.items() for value in values]
    headers = [(k, v) for k, v in headers if k.lower() not in ("content-length", *HOP_BY_HOP)]
    return GatewayAnswer(status, headers, body)


def compressed(answer: GatewayAnswer, accept_encoding: str | None, minimum: int | None) -> GatewayAnswer:
    """A buffered answer as API Gateway sends it with payload compression on (``MinimumCompressionSize``): gzip or
    deflate when the request's Accept-Encoding names one, the answer has no Content-Encoding of its own and its
    body is at least ``minimum`` bytes; otherwise as it is. (A streamed answer is never compressed.)"""
    if minimum is None or len(answer.body) < minimum:
        return answer
    if any(k.lower() == "content-encoding" for k, _ in answer.headers):
        return answer
    offered = [part.split(";", 1)[0].strip().lower() for part in (accept_encoding or "").split(",")]
    coding = next((c for c in ("gzip", "deflate") if c in offered), None)
    if coding is None:
        return answer
    body = gzip.compress(answer.body) if coding == "gzip" else zlib.compress(answer.body)
    headers = [(k, v) for k, v in answer.headers if k.lower() != "content-length"]
    return GatewayAnswer(answer.status, [*headers, ("Content-Encoding", coding)], body)


def _accepts_binary(accept: str | None, binary_media_types: Sequence[str]) -> bool:
    # API Gateway converts a base64 answer to binary when the request's Accept header (its first type) is one
    # of the API's binary media types; with any other Accept the base64 text goes out as it is.
    first = (accept or "").split(",", 1)[0]
    return media_type_matches(first, binary_media_types)
