"""``python -m bench.hidden``: a class period behind the chat. CODAP, with the plugin, in a browser tab hidden behind
another for the length of a lesson (50 minutes by default), while an LLM keeps calling tools, through every channel
(codap_relay_tooling.testing.class_period): Chromium through ``serve`` (SSE), through ``local-api`` with the push
WebSocket (at its default 90 s pings) and without it (SSE, whose stream ends every 14 minutes), and Firefox through
serve. Each browser is a person's (hidden_tab.py): headed Chromium over plain CDP, Firefox over BiDi.

It prints, for each channel: the call times in front and hidden (in the first minute, when timers still run once a
second, and after it), how often the plugin's channel opened (a reconnect, the plugin's or the browser's own EventSource
retry after a stream's end, opens it once more), whether the relay counted
the plugin as connected at each poll, whether anything was lost (the cases added, read back from CODAP), the point
pixels of the pictures (in front; of a graph drawn before the tab was hidden; of one made hidden, which must not be
pictured; of that one once shown again), what the page's timers did, and whether the same code shows afterwards.
Once a case has been added while hidden, no graph counts as drawn (drawing.js), so the graph drawn before is
pictured at the start only. Not a section of ``python -m bench`` (it takes a class period) and not run in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from codap_relay_tooling.testing.class_period import CHANNELS, Channel, start_channels
from codap_relay_tooling.testing.pictures import result_point_pixels
from codap_relay_tooling.testing.real_codap import HOW_TO_GET, codap_dist
from codap_relay_tooling.testing.servers import serve_app

STUDENTS = 50
SCATTER = {"datasetName": "students", "graphType": "scatterplot", "xAttribute": "grade", "yAttribute": "score"}


def late_student(n: int) -> dict[str, Any]:
    return {"datasetName": "students", "cases": [{"name": f"late {n}", "grade": 9, "score": 60}]}


# The calls of a round, one per channel per round, in turn: a change, then reads.
ROUND: list[tuple[str, Any]] = [
    ("add_codap_cases", late_student),
    ("get_codap_datasets", lambda n: {}),
    ("get_codap_status", lambda n: {}),
    ("export_codap_data", lambda n: {"datasetName": "students", "format": "csv"}),
]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.hidden", description=__doc__)
    p.add_argument("--minutes", type=float, default=50.0, help="how long every channel stays hidden")
    p.add_argument("--every", type=float, default=60.0, help="seconds between rounds of calls (one per channel)")
    p.add_argument("--pictures-every", type=float, default=10.0, help="minutes between pictures asked for hidden")
    p.add_argument("--channels", default=",".join(CHANNELS), help=f"comma-separated, of {', '.join(CHANNELS)}")
    p.add_argument("--push-ping", type=float, default=None, help="local-api's PUSH_PING_SECONDS (default: 90)")
    p.add_argument("--stream-max", type=float, default=None, help="local-api's STREAM_MAX_SECONDS (default: 840)")
    p.add_argument("--json", type=Path, help="write every figure to this file")
    args = p.parse_args(argv)
    args.names = tuple(n.strip() for n in args.channels.split(",") if n.strip())
    if unknown := set(args.names) - set(CHANNELS):
        p.error(f"unknown channel(s) {', '.join(sorted(unknown))}")
    return args


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def in_front(c: Channel) -> None:
    students = {"datasetName": "students", "dataType": "sample_students", "recordCount": STUDENTS}
    c.result("create_codap_dataset", students, c.front)
    made = c.result("create_codap_graph", {**SCATTER, "includeImage": True}, c.front)
    c.graphs["scatter"] = made["structuredContent"]["graphId"]
    c.pixels["front"] = result_point_pixels(made)
    for n, (tool, args) in enumerate(ROUND):
        c.result(tool, args(-1 - n), c.front)
        c.added += tool == "add_codap_cases"


def pictures_hidden(c: Channel, when: str) -> None:
    """The graph drawn before the tab was hidden (pictured while nothing else changed since: the first time only)
    and a graph made now (never pictured while hidden)."""
    before = c.hidden_call("get_codap_graph_image", {"graph": c.graphs["scatter"]})
    c.pixels[f"graph drawn before, {when}"] = result_point_pixels(before.get("result", {}))
    made = c.hidden_call("create_codap_graph", {**SCATTER, "yAttribute": "age", "includeImage": True})
    c.pixels[f"new graph hidden, {when}"] = result_point_pixels(made.get("result", {}))
    c.graphs.setdefault("madeHidden", made.get("result", {}).get("structuredContent", {}).get("graphId"))


def back_in_front(c: Channel) -> dict[str, Any]:
    c.browser.show()
    shown = c.tab.shown()
    image = c.result("get_codap_graph_image", {"graph": c.graphs.get("madeHidden")}, c.again)
    c.pixels["made hidden, shown again"] = result_point_pixels(image)
    for n, (tool, args) in enumerate(ROUND):
        c.result(tool, args(-100 - n), c.again)
        c.added += tool == "add_codap_cases"
    names = [i["values"]["name"] for i in c.tab.items("students")]
    return {"sameCode": shown["code"] == c.code, "status": shown["status"], "cases": [len(names), STUDENTS + c.added]}


def summary(times: list[float]) -> dict[str, float | int]:
    if not times:
        return {"n": 0}
    ordered = sorted(times)
    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 2),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
        "max": round(ordered[-1], 2),
    }


def report(channels: dict[str, Channel], ends: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, c in channels.items():
        round_tools = {t for t, _ in ROUND}
        hidden = [h for h in c.hidden if h["tool"] in round_tools]
        opened = [o["kind"] for o in c.browser.channels() if o["kind"].endswith(" open")]
        out[name] = {
            **c.figures(),
            "frontRound": summary([s for t, s in c.front.items() if t in round_tools]),
            "hiddenFirstMinute": summary([h["seconds"] for h in hidden if h["at"] < 60]),
            "hiddenAfterFirstMinute": summary([h["seconds"] for h in hidden if h["at"] >= 60]),
            "againRound": summary([s for t, s in c.again.items() if t in round_tools]),
            "reconnects": len(opened) - 1,
            "end": ends.get(name, {}),
        }
    return out


def print_report(figures: dict[str, Any], minutes: float) -> None:
    print(f"\nCODAP hidden behind another tab for {minutes:g} minutes\n")
    for name, f in figures.items():
        print(f"== {name} ({f['browser']})")
        print(f"  call times (s), in front:              {f['frontRound']}")
        print(f"  hidden, first minute:                  {f['hiddenFirstMinute']}")
        print(f"  hidden, after the first minute:        {f['hiddenAfterFirstMinute']}")
        print(f"  back in front:                         {f['againRound']}")
        print(f"  channels made and opened: {f['channelsOpened']} (reconnects: {f['reconnects']})")
        print(f"  relay counted the plugin connected:    {f['connectedPolls'][0]} of {f['connectedPolls'][1]} polls")
        print(f"  end: {f['end']}")
        print(f"  point pixels: {f['pointPixels']}")
        print(f"  timers: {f['timers']}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    build = codap_dist()
    if build is None:
        print(HOW_TO_GET, file=sys.stderr)
        return 2
    static = Starlette(routes=[Mount("/", app=StaticFiles(directory=build, html=True))])
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as folder:
        codap_url = stack.enter_context(serve_app(static, wait_for_stop=False))
        log(f"starting {', '.join(args.names)}")
        channels = start_channels(
            stack,
            codap_url,
            Path(folder),
            args.names,
            push_ping_seconds=args.push_ping,
            stream_max_seconds=args.stream_max,
        )
        for c in channels.values():
            in_front(c)
        time.sleep(2)  # CODAP's notices of the last changes
        for c in channels.values():
            c.hide()
        log("hidden")
        for c in channels.values():  # before any change while hidden: the graph drawn before keeps its picture
            pictures_hidden(c, "0 min")
        seconds, n, next_pictures = args.minutes * 60, 0, args.pictures_every
        while min(c.hidden_for() for c in channels.values()) < seconds:
            started = time.monotonic()
            minute = min(c.hidden_for() for c in channels.values()) / 60
            for c in channels.values():
                tool, make = ROUND[n % len(ROUND)]
                body = c.hidden_call(tool, make(n))
                c.added += tool == "add_codap_cases" and body["status"] == "completed"
                c.statuses.append(c.connected())
                if minute >= next_pictures:
                    pictures_hidden(c, f"{minute:.0f} min")
            if minute >= next_pictures:
                next_pictures += args.pictures_every
            n += 1
            log(f"round {n} at {minute:.1f} min hidden")
            for c in channels.values():
                c.browser.idle(max(0.0, args.every - (time.monotonic() - started)) / len(channels))
        ends: dict[str, dict[str, Any]] = {}
        for c in channels.values():
            pictures_hidden(c, "end")
            c.read_timers()
        for name, c in channels.items():
            ends[name] = back_in_front(c)
        figures = report(channels, ends)
    print_report(figures, args.minutes)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
