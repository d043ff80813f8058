"""The trial's control port (codap_relay_tooling.trial.control): what it answers for each request, with a fake
page in place of CODAP's (the real one is the trial itself, run by hand)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codap_relay_tooling.trial import control


class FakePage:
    url = "http://127.0.0.1:1/codap/?di=x"

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def code(self) -> str:
        return "ABCD2345"

    def di(self, request: dict[str, Any] | list[dict[str, Any]]) -> Any:
        self.sent.append(request)
        if request == {"action": "get", "resource": "boom"}:
            raise RuntimeError("CODAP did not answer")
        return {"success": True, "values": request}

    def screenshot(self, path: Path) -> Path:
        path.write_bytes(b"\x89PNG")
        return path


def answer(page: FakePage, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    reply = control(page, "http://relay", method, path, b"" if body is None else json.dumps(body).encode())
    return reply.status, json.loads(reply.body)


def test_info_names_the_relay_the_code_and_llms_txt() -> None:
    status, value = answer(FakePage(), "GET", "/info")
    assert status == 200
    assert value["code"] == "ABCD2345" and value["llms"] == "http://relay/llms.txt?code=ABCD2345"


def test_di_passes_one_request_or_a_list_and_returns_codaps_reply() -> None:
    page = FakePage()
    request = [{"action": "get", "resource": "componentList"}]
    assert answer(page, "POST", "/di", request) == (200, {"success": True, "values": request})
    assert page.sent == [request]


def test_bad_requests_and_page_failures_come_back_as_errors() -> None:
    page = FakePage()
    assert answer(page, "POST", "/di", 3)[0] == 400
    assert answer(page, "POST", "/screenshot", {})[0] == 400
    assert answer(page, "GET", "/nothing")[0] == 404
    status, value = answer(page, "POST", "/di", {"action": "get", "resource": "boom"})
    assert status == 500 and "CODAP did not answer" in value["error"]


def test_screenshot_writes_where_asked(tmp_path: Path) -> None:
    status, value = answer(FakePage(), "POST", "/screenshot", {"path": str(tmp_path / "a.png")})
    assert status == 200 and value["path"] == str(tmp_path / "a.png")
    assert (tmp_path / "a.png").read_bytes() == b"\x89PNG"
