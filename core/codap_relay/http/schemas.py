"""Request and response bodies as pydantic models: they validate input at the edge and generate OpenAPI."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..clock import iso
from ..records import canonical_json
from ..relay.log import LogItem
from ..tool_content import MAX_IMAGE_BYTES, summary


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolSpec(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(pattern=r"^[A-Za-z0-9_]{1,64}$")
    description: str = ""
    inputSchema: dict[str, Any]
    title: str | None = None


class SessionCreate(_Body):
    tools: list[ToolSpec] | None = Field(
        None, description="The plugin's own tool manifest; default: the six CODAP tools."
    )
    identity: str | None = Field(
        None,
        min_length=32,
        max_length=128,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="The plugin's long-lived secret key in this browser's storage: apps connected through OAuth "
        "reach this session by it, with no new consent. Leave it out where storage is blocked.",
    )


class SessionCreated(BaseModel):
    code: str = Field(description="8-character pairing code to give to the LLM.")
    ttl: int = Field(description="Seconds until the code expires unless the plugin keeps it alive.")
    expiresAt: str
    browserToken: str = Field(description="Secret for the plugin's role; send as Authorization: Bearer.")
    changes: str | None = Field(
        None,
        description="Where the plugin posts what CODAP said changed in the document (POST, browser token), so MCP "
        "subscriptions can tell their clients; only a long-lived server (codap-relay serve) offers it.",
    )
    push: str | None = Field(
        None,
        description="The push channel's WebSocket URL (wss://…), where the relay offers one (PUSH_URL): the plugin "
        "attaches there and receives its tool requests pushed; it falls back to GET /stream when it cannot.",
    )


class PushedRequest(BaseModel):
    id: str
    tool: str
    args: dict[str, Any]
    seq: int


class ChangesNote(_Body):
    datasets: list[Annotated[str, Field(max_length=200)]] = Field(
        default_factory=list, max_length=100, description="Datasets (by name) whose cases or attributes changed."
    )
    listChanged: bool = Field(False, description="Datasets or components came, went or were renamed.")


class ChangesNoted(BaseModel):
    seq: int = Field(description="How many change notes the session has had.")


class ToolRequest(_Body):
    code: str = Field(description="The pairing code shown in the CODAP plugin.")
    id: str | None = Field(None, description="Your request id (UUID or [A-Za-z0-9_-]{1,64}); generated if absent.")
    tool: str = Field(description="Tool name from GET /metadata.")
    args: dict[str, Any] = Field(default_factory=dict, description="Arguments matching the tool's inputSchema.")


class Queued(BaseModel):
    id: str
    status: Literal["queued", "delivered", "completed", "failed"]
    seq: int


class ErrorInfo(BaseModel):
    model_config = ConfigDict(extra="allow")
    message: str
    code: str | None = None


class ToolResponse(_Body):
    code: str
    id: str
    result: Any = None
    error: ErrorInfo | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ToolResponse:
        has_result = "result" in self.model_fields_set
        if has_result == (self.error is not None):
            raise ValueError("send exactly one of `result` or `error`")
        return self


class Answered(BaseModel):
    id: str
    status: Literal["completed", "failed"]


class TextItem(BaseModel):
    type: Literal["text"]
    text: str


class ImageItem(BaseModel):
    type: Literal["image"]
    data: str = Field(description=f"The picture, base64-encoded (at most {MAX_IMAGE_BYTES:,} bytes decoded).")
    mimeType: Literal["image/png", "image/jpeg", "image/gif", "image/webp"]


class ToolOutput(BaseModel):
    """What this relay's CODAP plugin answers (MCP's tool result shape). Another plugin may answer any JSON."""

    model_config = ConfigDict(extra="allow")
    content: list[TextItem | ImageItem] = Field(
        description="A readable summary as text; get_codap_graph_image (and create_codap_graph with includeImage) "
        "add the graph as an image item."
    )
    structuredContent: Any = Field(None, description="The same information as data.")


class Result(BaseModel):
    id: str
    status: Literal["completed", "failed"]
    result: ToolOutput | Any = None
    error: ErrorInfo | None = None
    timestamp: str


class Pending(BaseModel):
    id: str
    status: Literal["queued", "delivered"]


class Metadata(BaseModel):
    version: str
    tools: list[ToolSpec]


class SessionStatus(BaseModel):
    code: str
    ttl: int
    expiresAt: str
    connected: bool
    lastSeen: str | None
    pending: int


class SessionClosed(BaseModel):
    code: str
    status: Literal["closed"]
    failedRequests: int


class SessionDetached(BaseModel):
    code: str
    detached: bool  # whether a stream of that tab owned delivery (false: another tab's did, or none)


class LogEntry(BaseModel):
    model_config = ConfigDict(extra="allow")
    seq: int
    id: str
    tool: str
    status: str
    queuedAt: str
    deliveredAt: str | None
    completedAt: str | None
    latencyMs: float | None
    error: str | None


class ActivityLog(BaseModel):
    code: str
    entries: list[LogEntry]


class TraceEntry(LogEntry):
    args: dict[str, Any]
    summary: str | None = Field(description="The first line of the answer's text or of its error; null if none.")


NEXT_PAGE = "Pass as ?after= to read the next page; null when this page is the last."


class TracePage(BaseModel):
    code: str
    entries: list[TraceEntry]
    next: int | None = Field(description=NEXT_PAGE)


class FullLogEntry(LogEntry):
    args: dict[str, Any]
    result: Any = Field(None, description="The answer's result, for a completed request.")


class FullLogPage(BaseModel):
    code: str
    entries: list[FullLogEntry] = Field(
        description="Each entry with its arguments and its whole answer: `result`, or for a failed request "
        "`error` as the plugin sent it ({message, code})."
    )
    next: int | None = Field(description=NEXT_PAGE)


class ErrorBody(BaseModel):
    error: str = Field(description="snake_case error code")
    message: str = Field(description="What was wrong and what to do")
    code: int = Field(description="HTTP status")
    correlationId: str
    # The error's data fields, where it has them (codap_relay.errors.CLIENT_FIELDS).
    reason: str | None = Field(None, description="Why a session was not found: unknown, expired or closed")
    field: str | None = Field(None, description="The request field that was wrong")
    path: str | None = Field(None, description="Where in the tool arguments the problem is")
    tool: str | None = None
    available: list[str] | None = Field(
        None, description="The session's tools, for an unknown tool; the tool's arguments, for an unexpected one"
    )
    closest: str | None = Field(None, description="For an unexpected argument: the accepted one it most resembles")
    limit: int | None = Field(None, description="The size limit in bytes that was exceeded")
    retryAfter: int | None = Field(None, description="Seconds to wait before retrying (also the Retry-After header)")
    requestId: str | None = None


class Health(BaseModel):
    status: Literal["ok"]
    version: str


# --- the activity log and the trace, as the plugin reads them ----------------------------------------------


def log_entry(item: LogItem, *, full: bool = False) -> dict[str, Any]:
    """One request of the activity log; ``full``: with its arguments and its answer (result or error)."""
    r = item.request
    entry: dict[str, Any] = {
        "seq": r.seq,
        "id": r.id,
        "tool": r.tool,
        "status": item.status,
        "queuedAt": iso(r.created_at),
        "deliveredAt": None if r.delivered_at is None else iso(r.delivered_at),
        "completedAt": None if r.completed_at is None else iso(r.completed_at),
        "latencyMs": None if r.completed_at is None else round((r.completed_at - r.created_at) * 1000, 1),
        "error": r.error_code,
    }
    if full:
        entry["args"] = r.args
        entry.update(item.answer or {})
    return entry


def trace_entry(item: LogItem) -> dict[str, Any]:
    """One request of a trace page: the log entry with its arguments and a one-line summary of its answer."""
    return {**log_entry(item), "args": item.request.args, "summary": summary(item.answer)}


def full_entry(item: LogItem) -> dict[str, Any]:
    """One request of a full log page (?full=1): the log entry with its arguments and its whole answer."""
    return log_entry(item, full=True)


def entry_size(entry: Callable[[LogItem], dict[str, Any]]) -> Callable[[LogItem], int]:
    """What ``entry`` of an item weighs in a page's JSON (UTF-8 bytes), for the relay to page by."""
    return lambda item: len(canonical_json(entry(item)).encode())
