"""The printed report: Markdown tables (so a run can be pasted into docs/performance.md as it is)."""

from __future__ import annotations

from typing import Any


def ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def x(value: float | None) -> str:
    return "-" if value is None else f"x{value:g}"


def num(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:g}"


def cell(summary: dict[str, Any], ratios: dict[str, Any] | None, key: str) -> str:
    text = ms(summary.get(key))
    return f"{text} ({x(ratios.get(key))})" if ratios else text


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def latency_rows(label: str, summary: dict[str, Any], ratios: dict[str, Any] | None) -> list[str]:
    return [label, str(summary.get("n", 0))] + [cell(summary, ratios, k) for k in ("p50", "p95", "p99", "max")]


LATENCY_HEADER = ["what", "n", "p50 ms (xbaseline)", "p95 ms", "p99 ms", "max ms"]


def render(results: dict[str, Any]) -> str:
    m = results["machine"]
    out = [
        f"# codap-relay benchmark, {m['date']}",
        "",
        f"{m['cpus']} CPUs, {m['memory_gib']} GiB, Python {m['python']}, {m['platform']}; "
        f"load average at start {m['load_average_at_start']}; run took {results.get('wall_seconds')} s.",
        "Baseline: a trivial JSON endpoint on the same uvicorn process and app, same client, same concurrency. "
        "Ratios are relay ÷ baseline at the same percentile.",
    ]
    if "round_trip" in results:
        rt = results["round_trip"]
        rows = []
        for level in rt["levels"]:
            c = level["concurrency"]
            rows.append(latency_rows(f"baseline GET, c={c}", level["baseline"], None))
            rows.append(latency_rows(f"round trip HTTP, c={c}", level["http"], level["http_ratio"]))
            rows.append(latency_rows(f"delivery (POST → SSE), c={c}", level["delivery"], level["delivery_ratio"]))
            if "mcp" in level:
                rows.append(latency_rows(f"round trip MCP tools/call, c={c}", level["mcp"], level["mcp_ratio"]))
            if level["errors"]:
                rows.append([f"errors, c={c}", str(level["errors"]), "", "", "", ""])
        out += ["", f"## Round trips (store: {rt['store']}; c = concurrent session pairs)", ""]
        out += table(LATENCY_HEADER, rows)
    if "stores" in results:
        st = results["stores"]
        rows = []
        for row in st["rows"]:
            label = f"{row['store']}, c={row['concurrency']}"
            rows.append(latency_rows(label, row["http"], row["http_ratio"]))
        out += ["", "## Stores (HTTP round trip; each store on its own server, with its own baseline)", ""]
        out += table(LATENCY_HEADER, rows)
        out += [f"- {note}" for note in st["notes"]]
    if "throughput" in results:
        t = results["throughput"]
        out += [
            "",
            f"## Throughput at saturation ({t['concurrency']} pairs, {t['seconds']:g} s, one server process)",
            "",
        ]
        out += table(
            ["round trips/s", "baseline requests/s", "ceiling (baseline ÷ 3 requests)", "fraction of ceiling"],
            [
                [
                    f"{t['round_trips_per_second']:g}",
                    f"{t['baseline_requests_per_second']:g}",
                    f"{t['ceiling_round_trips_per_second']:g}",
                    x(t["fraction_of_ceiling"]),
                ]
            ],
        )
    if "idle" in results:
        i = results["idle"]
        r, b = i["relay"], i["baseline"]
        keys = [
            ("connected", "connected"),
            ("failed", "failed"),
            ("connect_seconds", "time to connect all (s)"),
            ("rss_before_mib", "server RSS before (MiB)"),
            ("rss_after_mib", "server RSS with the streams (MiB)"),
            ("kib_per_connection", "memory per connection (KiB)"),
            ("heartbeat_gaps", "heartbeat gaps observed"),
            ("on_time_fraction", "heartbeats on time (≤ interval + 1 s)"),
            ("late_p50_ms", "lateness p50 (ms)"),
            ("late_p99_ms", "lateness p99 (ms)"),
            ("late_max_ms", "lateness max (ms)"),
        ]
        out += [
            "",
            f"## Idle streams: {r['connections']} SSE connections on one server process "
            f"(store {i['store']}, heartbeat every {i['heartbeat_seconds']:g} s, held {i['hold_seconds']:g} s)",
            "",
        ]
        out += table(
            ["", "relay /stream", "baseline SSE (heartbeats only)"],
            [[label, str(r[k]), str(b[k])] for k, label in keys],
        )
    if "coldstart" in results:
        cs = results["coldstart"]
        rows = []
        base = cs["baseline"]
        for name, f in cs["functions"].items():
            inv = f.get("invocation") or {}
            top = ", ".join(f"{t['package']} {t['ms']:g}" for t in f.get("top", [])[:4])
            init = f.get("init_ms")
            at = f.get("at_memory") or {}
            projected = f"{ms(at['projected_cold_ms'])} at {at['memory_mb']} MB" if at else "-"
            rows.append(
                [
                    name,
                    f"{ms(init)} ({x(round(init / base['init_ms'], 1) if init and base.get('init_ms') else None)})",
                    ms(inv.get("first_invocation_ms")),
                    ms(inv.get("warm_invocation_ms")),
                    ms(at.get("cold_cpu_ms")),
                    projected,
                    top or str(f.get("error", "")),
                ]
            )
        top = ", ".join(f"{t['package']} {t['ms']:g}" for t in base.get("top", [])[:4])
        rows.append(["baseline (Starlette + Mangum)", ms(base.get("init_ms")), "-", "-", "-", "-", top])
        out += ["", "## Cold start proxy (module init, best of fresh interpreters; first invocation under moto)", ""]
        headers = ["handler", "init ms (xbaseline)", "1st invocation ms", "warm ms"]
        headers += ["CPU ms, init + 1st", "that CPU at the vCPU share of", "top imports (self ms)"]
        out += table(headers, rows)
        out.append(
            "- The last but one column assumes Lambda gives init no more CPU than its memory buys (1,769 MB = one "
            "vCPU); the waits' budget under API Gateway's 29 s in docs/deploy.md is built on it."
        )
        if not cs["functions"]:
            out.append("- no Lambda handler modules under functions/ yet")
    if "cost" in results:
        c = results["cost"]
        p, d = c["prices"], c["deployment"]
        rows = []
        for key, label in (
            ("idle_plugin_hour", "1 idle connected plugin, per hour"),
            ("per_1000_http_calls", "1,000 tool calls over HTTP"),
            ("per_1000_mcp_calls", "1,000 tool calls over MCP"),
        ):
            if key not in c:
                continue
            f = c[key]
            rows.append(
                [
                    label,
                    num(f["read_units"]),
                    num(f["write_units"]),
                    num(f["lambda_ms"]),
                    num(f["lambda_gb_seconds"]),
                    num(f["requests"]),
                    f"${f['dynamodb_usd']:.4f}",
                    f"${f['lambda_usd']:.4f}",
                    f"${f['api_gateway_usd']:.4f}",
                    f"${f['total_usd']:.4f}",
                ]
            )
        gb_second = f"{p['lambda_gb_second']:.10f}".rstrip("0")
        out += [
            "",
            f"## Cost model (deployed stack; counts from: {c['source']})",
            "",
            f"Waiting as deployed: polling every {d['poll_interval_seconds']:g} s, no in-process wake-ups; "
            f"stream ends every {d['stream_max_seconds']:g} s; heartbeat {d['heartbeat_seconds']:g} s. Prices (USD, "
            f"us-east-1 on-demand): DynamoDB ${p['dynamodb_read_per_million']}/M read units, "
            f"${p['dynamodb_write_per_million']}/M write units; Lambda ${gb_second}/GB-s + "
            f"${p['lambda_per_million_requests']}/M requests; API Gateway REST ${p['api_gateway_rest_per_million']}/M.",
            "",
        ]
        out += table(
            [
                "",
                "read units",
                "write units",
                "Lambda ms",
                "Lambda GB-s",
                "requests",
                "DynamoDB",
                "Lambda",
                "API GW",
                "total",
            ],
            rows,
        )
    if "codap" in results:
        out += codap_section(results["codap"])
    return "\n".join(out)


def codap_section(c: dict[str, Any]) -> list[str]:
    out = ["", "## Tool time in the real CODAP (plugin side: from the tool-request event to POST /response)", ""]
    if "skipped" in c:
        return [*out, f"- not measured: {c['skipped']}"]
    base = c["baseline_one_message_ms"]
    out += [
        f"CODAP {c['codap']}; document: {c['document']}. Baseline: one Data Interactive message from the plugin's "
        f'frame to CODAP and back, {base:.2f} ms (p50 of 20). "messages": messages to CODAP per call; "waiting '
        "for CODAP\": the share of the plugin's time spent waiting for CODAP's answers (the rest is the plugin's "
        'own work); "LLM round trip": POST /request?wait to the answer, relay included.',
        "",
    ]
    rows = [
        [
            r["label"],
            str(r["calls"]),
            f"{ms(r['first_ms'])} ({x(r['first_ratio'])})",
            f"{ms(r['later_p50_ms'])} ({x(r['later_ratio'])})",
            ms(r["later_max_ms"]),
            str(r["messages"]),
            "-" if r["codap_share"] is None else f"{r['codap_share']:.0%}",
            ms(r["llm_p50_ms"]),
        ]
        for r in c["rows"]
    ]
    out += table(
        [
            "tool",
            "calls",
            "first call ms (xbaseline)",
            "later p50 ms",
            "later max ms",
            "messages",
            "waiting for CODAP",
            "LLM round trip p50",
        ],
        rows,
    )
    if "webgl" in c:
        w = c["webgl"]
        out += ["", "The first get_codap_status after a new graph (the issue's 15 s), by how CODAP draws points:", ""]
        out += table(
            [
                "CODAP graphs drawn with",
                "create_codap_graph ms",
                "first get_codap_status ms",
                "next ms",
                "picture p50 ms",
            ],
            [
                [
                    label,
                    ms(w[k]["graph_ms"]),
                    ms(w[k]["first_status_ms"]),
                    ms(w[k]["next_status_ms"]),
                    ms(w[k].get("picture_ms")),
                ]
                for k, label in (
                    ("webgl", "WebGL (CODAP's default; software here, no GPU)"),
                    ("canvas", "canvas (Settings > Disable graphics acceleration)"),
                )
            ],
        )
    return out
