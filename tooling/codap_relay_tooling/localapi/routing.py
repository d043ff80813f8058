"""Which route of the REST API answers a request, chosen the way API Gateway chooses its resource.

A resource path is a list of segments: literal (``sessions``), one-segment variables (``{code}``) and a greedy
last variable (``{proxy+}``, one or more segments). The most specific resource wins: literal before variable
before greedy, segment by segment. A trailing slash does not change the resource (``/plugin/`` is the resource
``/plugin``; the event's ``path`` keeps the slash). A method the resource lacks is answered like a missing
resource: REST APIs say 403 ``Missing Authentication Token`` to both.
"""

from __future__ import annotations

from dataclasses import dataclass

from .template import Route

LITERAL, VARIABLE, GREEDY = 0, 1, 2


@dataclass(frozen=True)
class Match:
    route: Route
    path_parameters: dict[str, str]


def _segments(path: str) -> list[str]:
    return [s for s in path.strip("/").split("/") if s] if path.strip("/") else []


def _kind(segment: str) -> int:
    if segment.startswith("{") and segment.endswith("+}"):
        return GREEDY
    if segment.startswith("{") and segment.endswith("}"):
        return VARIABLE
    return LITERAL


def _bind(template: list[str], parts: list[str]) -> tuple[tuple[int, ...], dict[str, str]] | None:
    """The specificity key (lower wins) and the variables, if ``parts`` fits the resource ``template``."""
    rank: list[int] = []
    params: dict[str, str] = {}
    for i, segment in enumerate(template):
        kind = _kind(segment)
        if kind == GREEDY:
            if i != len(template) - 1 or i >= len(parts):
                return None
            params[segment[1:-2]] = "/".join(parts[i:])
            return (*rank, GREEDY), params
        if i >= len(parts):
            return None
        if kind == LITERAL and segment != parts[i]:
            return None
        if kind == VARIABLE:
            params[segment[1:-1]] = parts[i]
        rank.append(kind)
    if len(parts) != len(template):
        return None
    return tuple(rank), params


class Router:
    def __init__(self, routes: tuple[Route, ...]) -> None:
        self.routes = routes
        self._templates = [(route, _segments(route.path)) for route in routes]

    def match(self, method: str, path: str) -> Match | None:
        """The route for ``method`` on ``path`` (the path after the stage), or None: API Gateway's 403."""
        parts = _segments(path)
        best: tuple[tuple[int, ...], str, dict[str, str]] | None = None
        for route, template in self._templates:
            bound = _bind(template, parts)
            if bound is None:
                continue
            rank, params = bound
            if best is None or rank < best[0]:
                best = (rank, route.path, params)
        if best is None:
            return None
        resource = best[1]
        methods = {r.method: r for r in self.routes if r.path == resource}
        chosen = methods.get(method.upper()) or methods.get("ANY")
        return Match(chosen, best[2]) if chosen is not None else None
