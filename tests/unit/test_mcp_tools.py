"""MCP tool presentation, the MCP error table and the host-check settings, without any transport."""

from __future__ import annotations

from typing import Any

import httpx
import mcp_types as types
import pytest

from codap_relay import errors as e
from codap_relay.catalog import tool_title
from codap_relay.errors import RequestExpired
from codap_relay.http.mcp_endpoint import security_settings
from codap_relay.manifest import DEFAULT_TOOLS
from codap_relay.mcp.tools import (
    MCP_ERRORS,
    RATE_LIMITED,
    SESSION_NOT_FOUND,
    mcp_tools,
    protocol_error,
    surface_for,
    tool_annotations,
)
from codap_relay.settings import Settings


def test_default_tools_have_titles_and_the_agreed_annotations() -> None:
    tools = {t.name: t for t in mcp_tools(DEFAULT_TOOLS)}
    assert list(tools) == [t["name"] for t in DEFAULT_TOOLS]
    assert tools["create_codap_dataset"].title == "Create a CODAP dataset"
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.open_world_hint is False
        assert tool.annotations.title == tool.title
    reads = {n for n, t in tools.items() if t.annotations and t.annotations.read_only_hint}
    assert reads == {"get_codap_datasets", "get_codap_status", "export_codap_data"}
    for name in ("create_codap_dataset", "create_codap_graph", "add_codap_cases"):
        hints = tools[name].annotations
        assert hints is not None and (hints.read_only_hint, hints.destructive_hint) == (False, False)


def test_raw_api_and_unknown_tools_are_treated_as_destructive() -> None:
    for name in ("codap_api", "plugin_specific_thing"):
        hints = tool_annotations(name, "x")
        assert (hints.read_only_hint, hints.destructive_hint, hints.open_world_hint) == (False, True, False)


def test_titles_prefer_the_manifest_then_the_plugins_definition_then_the_name() -> None:
    assert tool_title({"name": "get_codap_status", "title": " Status of CODAP "}) == "Status of CODAP"
    assert tool_title({"name": "codap_api"}) == "Raw CODAP Data Interactive request"
    assert tool_title({"name": "plugin_specific_codap_thing"}) == "Plugin specific CODAP thing"


def test_annotations_serialise_in_camel_case() -> None:
    wire = types.ListToolsResult(tools=mcp_tools(DEFAULT_TOOLS[3:4])).model_dump(by_alias=True, exclude_none=True)
    assert wire["tools"][0]["annotations"] == {
        "title": "List CODAP datasets",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }


CASES: list[tuple[e.RelayError, int, bool]] = [
    (e.InvalidArguments("bad", tool="t", path="args.x"), types.INVALID_PARAMS, True),
    (e.UnknownTool("no such tool", tool="t", available=["a"]), types.INVALID_PARAMS, False),
    (e.InvalidCode("bad code"), types.INVALID_PARAMS, False),
    (e.SessionNotFound("gone", reason="expired"), SESSION_NOT_FOUND, False),
    (e.RateLimited("slow down", retry_after=3, scope="request"), RATE_LIMITED, True),
    (RequestExpired("expired", request_id="r1"), -32013, True),
    (e.StoreUnavailable("later"), -32012, True),
    (e.TokenMissing("plugin only"), types.INTERNAL_ERROR, False),
]


@pytest.mark.parametrize(("exc", "code", "in_result"), CASES, ids=lambda v: type(v).__name__)
def test_error_table(exc: e.RelayError, code: int, in_result: bool) -> None:
    surface = surface_for(exc)
    assert (surface.rpc_code, surface.in_tool_result) == (code, in_result)
    error = protocol_error(exc)
    assert error.code == code and error.message == exc.message and error.data["error"] == exc.error


def test_error_data_carries_the_fields_a_client_needs() -> None:
    data: Any = protocol_error(e.RateLimited("slow", retry_after=3, scope="request")).data
    assert data == {"error": "rate_limited", "retryAfter": 3}
    data = protocol_error(e.SessionNotFound("gone", reason="closed")).data
    assert data == {"error": "session_not_found", "reason": "closed"}
    data = protocol_error(e.PayloadTooLarge("too big", limit=1000)).data
    assert data == {"error": "payload_too_large", "limit": 1000}  # as the HTTP error body shows it


def test_table_lists_subclasses_before_their_bases() -> None:
    classes = [cls for cls, _ in MCP_ERRORS]
    for i, cls in enumerate(classes):
        for later in classes[i + 1 :]:
            assert not issubclass(later, cls), f"{later.__name__} is shadowed by {cls.__name__}"


def test_security_settings_from_allowed_hosts() -> None:
    assert security_settings(Settings(relay_store="memory:")).enable_dns_rebinding_protection is False
    s = security_settings(
        Settings(relay_store="memory:", allowed_hosts="relay.example.org, localhost:8080", public_base_url=None)
    )
    assert s.enable_dns_rebinding_protection is True
    assert s.allowed_hosts == ["relay.example.org", "relay.example.org:*", "localhost:8080"]
    assert "https://relay.example.org" in s.allowed_origins and "https://codap.concord.org" in s.allowed_origins


async def test_llms_txt_fills_in_the_session_urls(client: httpx.AsyncClient) -> None:
    generic = await client.get("/llms.txt")
    assert generic.status_code == 200 and "code=CODE" in generic.text
    filled = await client.get("/llms.txt", params={"code": " abcdefgh "})
    assert "GET http://relay.test/metadata?code=ABCDEFGH" in filled.text
    assert '{"code": "ABCDEFGH", "tool": "get_codap_datasets", "args": {}}' in filled.text
    assert "http://relay.test/mcp/ABCDEFGH" in filled.text and "{" + "base}" not in filled.text
    bad = await client.get("/llms.txt", params={"code": "nope"})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_code"


def test_plugin_results_in_mcp_shape_pass_through() -> None:
    from codap_relay.mcp.tools import tool_result

    def texts(result: types.CallToolResult) -> list[str]:
        assert all(isinstance(c, types.TextContent) for c in result.content)
        return [c.text for c in result.content if isinstance(c, types.TextContent)]

    shaped = {"content": [{"type": "text", "text": "Made dataset s"}], "structuredContent": {"dataset": "s", "n": 5}}
    r = tool_result(shaped)
    assert texts(r) == ["Made dataset s"]
    assert r.structured_content == {"dataset": "s", "n": 5} and not r.is_error
    plain = tool_result({"datasets": []})
    assert texts(plain) == ['{"datasets": []}'] and plain.structured_content == {"datasets": []}
    odd = tool_result({"content": [{"type": "image", "data": "x"}]})  # not text: keep the JSON
    assert texts(odd)[0].startswith('{"content"')


def test_a_picture_in_a_plugin_result_becomes_mcp_image_content() -> None:
    from codap_relay.mcp.tools import tool_result

    png = "iVBORw0KGgo="
    shaped = {
        "content": [{"type": "text", "text": "Graph 12"}, {"type": "image", "data": png, "mimeType": "image/png"}],
        "structuredContent": {"graphId": 12},
    }
    r = tool_result(shaped)
    assert [type(c) for c in r.content] == [types.TextContent, types.ImageContent]
    picture = r.content[1]
    assert isinstance(picture, types.ImageContent) and (picture.data, picture.mime_type) == (png, "image/png")
    wire = r.model_dump(by_alias=True, exclude_none=True)
    assert wire["content"][1] == {"type": "image", "data": png, "mimeType": "image/png"}
    assert r.structured_content == {"graphId": 12}


def test_annotations_a_manifest_declares_win_over_the_name_table() -> None:
    declared = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
    spec = {"name": "get_codap_graph_image", "inputSchema": {"type": "object"}, "annotations": declared}
    (tool,) = mcp_tools([spec])
    hints = tool.annotations
    assert hints is not None and hints.title == tool.title
    assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (True, False, True)
    # codap_api's name says destructive; a manifest that says otherwise is the plugin's own word
    says_read_only = {"name": "codap_api", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}
    (raw,) = mcp_tools([says_read_only])
    assert raw.annotations is not None and raw.annotations.read_only_hint is True
    assert raw.annotations.destructive_hint is None


def test_a_manifest_with_malformed_annotations_is_refused() -> None:
    from codap_relay.manifest import check_manifest

    tool = {"name": "t", "inputSchema": {"type": "object"}}
    check_manifest([{**tool, "annotations": {"readOnlyHint": True, "somethingNew": 1}}])
    for bad in ("read-only", {"readOnlyHint": "yes"}):
        with pytest.raises(e.InvalidManifest, match="annotations"):
            check_manifest([{**tool, "annotations": bad}])


def test_a_manifest_output_schema_must_be_an_object_json_schema() -> None:
    from codap_relay.manifest import check_manifest

    tool = {"name": "t", "inputSchema": {"type": "object"}}
    check_manifest([{**tool, "outputSchema": {"type": "object", "properties": {"n": {"type": "number"}}}}])
    for bad, why in (
        ({"type": "array"}, '"type": "object"'),
        ([], '"type": "object"'),
        ({"type": "object", "required": "n"}, "not a valid JSON Schema"),
    ):
        with pytest.raises(e.InvalidManifest, match=why) as caught:
            check_manifest([{**tool, "outputSchema": bad}])
        assert caught.value.data["path"] == "tools[0].outputSchema"


def test_every_typed_plugin_tool_lists_its_output_schema_and_codap_api_none() -> None:
    from codap_relay.catalog import plugin_tools
    from codap_relay.manifest import check_manifest

    specs = list(plugin_tools())
    check_manifest(specs)
    listed = {t.name: t for t in mcp_tools(specs)}
    for spec in specs:
        assert listed[spec["name"]].output_schema == spec.get("outputSchema")
    assert [n for n, t in listed.items() if t.output_schema is None] == ["codap_api"]
    wire = listed["get_codap_datasets"].model_dump(by_alias=True, exclude_none=True)
    assert wire["outputSchema"]["type"] == "object" and wire["outputSchema"]["required"] == ["datasets"]


def test_a_plugin_error_becomes_a_structured_error_body() -> None:
    from codap_relay.mcp.tools import browser_error_data, error_result

    error = {
        "message": 'No dataset "Birds". Datasets: Mammals.',
        "code": "dataset_not_found",
        "data": {"available": ["Mammals"], "error": "ignored", "datasetName": "Birds"},
    }
    r = error_result("CODAP could not run x: …", browser_error_data(error))
    assert r.is_error is True and r.content[0].text == "CODAP could not run x: …"  # type: ignore[union-attr]
    assert r.structured_content == {
        "error": "dataset_not_found",
        "message": 'No dataset "Birds". Datasets: Mammals.',
        "available": ["Mammals"],
        "datasetName": "Birds",
    }
    assert browser_error_data({"message": "m", "code": "c", "data": [1]}) == {"error": "c", "message": "m", "data": [1]}
    assert browser_error_data("boom") == {"error": "plugin_error"}


def test_a_typed_tools_answer_that_breaks_its_output_schema_is_an_error_keeping_the_text() -> None:
    from codap_relay.mcp.tools import tool_result, typed

    spec = {"name": "t", "outputSchema": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}}
    good = tool_result({"content": [{"type": "text", "text": "ok"}], "structuredContent": {"n": 1}})
    assert typed(spec, good) is good
    bad = typed(spec, tool_result({"content": [{"type": "text", "text": "ok"}], "structuredContent": {"n": "1"}}))
    assert bad.is_error is True and [c.text for c in bad.content][1] == "ok"  # type: ignore[union-attr]
    assert bad.structured_content is not None and bad.structured_content["error"] == "invalid_result"
    assert "structuredContent.n" in bad.structured_content["message"]
    bare = typed(spec, tool_result("just text"))
    assert bare.is_error is True and "no structuredContent" in bare.content[0].text  # type: ignore[union-attr]
    assert typed({"name": "u"}, tool_result("just text")).is_error is False


def test_a_plugin_results_meta_reaches_the_mcp_client() -> None:
    """The plugin reports how long a slow CODAP took in ``_meta`` (its outputSchema forbids extra fields)."""
    from codap_relay.mcp.tools import tool_result

    wait = {"codapMs": 25312, "messages": 3, "slowestMs": 25100, "slowestRequest": "get componentList"}
    shaped = {
        "content": [{"type": "text", "text": "CODAP is connected.\nCODAP was slow: …"}],
        "structuredContent": {"codapVersion": "3.1.0"},
        "_meta": {"codap-relay/codap-wait": wait},
    }
    wire = tool_result(shaped).model_dump(by_alias=True, exclude_none=True)
    assert wire["_meta"] == {"codap-relay/codap-wait": wait}
    assert wire["structuredContent"] == {"codapVersion": "3.1.0"}
    assert "_meta" not in tool_result({"content": [{"type": "text", "text": "ok"}]}).model_dump(
        by_alias=True, exclude_none=True
    )


def test_a_timeout_after_the_plugin_took_the_request_says_codap_is_likely_slow_and_the_fix() -> None:
    from codap_relay.mcp.tools import Caller, _timeout_text

    caller = Caller(code="ABCD2345", client=None, base_url="http://relay.test", session=None)  # type: ignore[arg-type]
    taken = _timeout_text(caller, "get_codap_status", "r1", 15, delivered=True)
    queued = _timeout_text(caller, "get_codap_status", "r1", 15)
    assert taken.startswith("CODAP did not answer get_codap_status (request id r1) within 15 s. The plugin has")
    assert "Graphics Acceleration: Turn off" in taken and "hardware acceleration" in taken
    assert "graphics acceleration" not in queued and "stays queued" in queued and "stays queued" in taken
