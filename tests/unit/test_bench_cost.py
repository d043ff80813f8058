"""The cost model's arithmetic (bench/cost.py) on hand-made figures: each leg priced as the price pages say."""

from __future__ import annotations

import pytest
from bench import cost

ARM = cost.Deployment(
    poll_interval_seconds=0.05,
    idle_poll_interval_seconds=0.15,
    poll_active_seconds=60,
    stream_max_seconds=840,
    heartbeat_seconds=15,
    push_ping_seconds=15,
    architecture="arm64",
    memory_mb={"StreamFunction": 128, "RequestFunction": 256, "ResponseFunction": 512},
)
# An idle plugin's hour as bench.deployed reports it: 24,000 polls of half a unit, a presence write every 10 s.
IDLE = {"read_units": 12_000, "write_units": 360, "polling_reads": 24_000, "dynamodb_requests": 24_360}
CALL = {
    "seconds_per_call": 0.1,
    "read_units": 7.0,
    "write_units": 12.0,
    "polling_read_units": 2.0,
    "api_requests": 2,
    "lambda_billed_ms": {"RequestFunction": 80.0, "ResponseFunction": 20.0},
}


def test_sse_idle_hour_holds_the_stream_function_all_hour() -> None:
    usage = cost.sse_idle_hour(IDLE, ARM, cost.Prices())
    assert usage.lambda_gb_seconds == 3600 * 128 / 1024  # 450 GB-s
    assert usage.lambda_requests == usage.api_requests == pytest.approx(3600 / 840)
    assert usage.lambda_streamed_bytes == 0  # heartbeats stay far under the free 6 MB a response
    usd = cost.dollars(usage, cost.Prices(), "arm64")
    assert usd["lambda_usd"] == pytest.approx(450 * 0.0000133334 + 3600 / 840 * 0.2e-6, abs=1e-6)
    assert usd["dynamodb_usd"] == pytest.approx((12_000 * 0.125 + 360 * 0.625) / 1e6, abs=1e-6)


def test_push_idle_hour_is_pings_messages_and_minutes() -> None:
    usage = cost.push_idle_hour(IDLE, ARM, cost.Prices())
    pings = 3600 / 15
    assert usage.websocket_messages == 2 * pings + 0.5 * cost.PUSH_MESSAGES_PER_CONNECT  # reconnect every 2 h
    assert usage.websocket_connection_minutes == 60
    assert usage.lambda_requests == pings + 0.5 * cost.PUSH_INVOCATIONS_PER_CONNECT
    assert usage.read_units == pytest.approx(pings * 0.5 + 0.5 * cost.PUSH_UNITS_PER_CONNECT[0])
    # every ping refreshes the presence (relay.presence: a push plugin's is due after half a ping)
    assert usage.write_units == pytest.approx(pings + 0.5)
    assert cost.push_idle_hour(IDLE, ARM, cost.Prices(), 90).write_units == pytest.approx(40 + 0.5)
    assert usage.api_requests == 0 and usage.lambda_streamed_bytes == 0


def test_push_call_drops_only_the_streams_polls_and_adds_the_publish() -> None:
    sse, push = cost.sse_call(CALL, IDLE, ARM), cost.push_call(CALL, IDLE, ARM, cost.Prices())
    # 0.1 s at the active 0.05 s interval: two polls of half a unit, within the call's 2 polling units
    assert sse.read_units - push.read_units == pytest.approx(1.0)
    assert push.write_units == sse.write_units and push.api_requests == sse.api_requests == 2
    assert push.lambda_gb_seconds - sse.lambda_gb_seconds == pytest.approx(cost.PUSH_PUBLISH_BILLED_MS / 1000 / 4)
    assert push.websocket_messages == 1 and sse.websocket_messages == 0


def test_websocket_messages_are_metered_in_32_kb_units() -> None:
    prices = cost.Prices()
    assert [cost.ws_units(b, prices) for b in (1, 32 * 1024, 32 * 1024 + 1, 120_000)] == [1, 1, 2, 4]


def test_scenarios_and_goals() -> None:
    figures = {"idle": IDLE, "kinds": {"http_wait": CALL}}
    model = cost.model(figures, ARM, cost.Prices())
    sse, push = model["channels"]["sse"]["scenarios"], model["channels"]["websocket"]["scenarios"]
    hour, per_call = sse["idle_plugin_hour"]["total_usd"], sse["thousand_calls"]["total_usd"] / 1000
    assert sse["class_hour"]["total_usd"] == pytest.approx(30 * hour + 300 * per_call, rel=1e-3)
    assert sse["district_day"]["total_usd"] == pytest.approx(18_000 * hour + 100_000 * per_call, rel=1e-3)
    assert push["class_hour"]["total_usd"] < sse["class_hour"]["total_usd"] / 5
    goals = {g["goal"]: g for g in model["goals"]}
    assert len(goals) == 4
    for g in goals.values():  # each verdict is the comparison it names, with its reason
        assert g["met"] == (g["usd"] <= g["limit"]) and g["why"].startswith("largest legs:")
    sse_goal = goals["SSE on arm64 ≤ $0.0065 per plugin-hour"]
    assert sse_goal["usd"] == hour and not sse_goal["met"] and "held the whole hour" in sse_goal["why"]
    pings = [r["ping_seconds"] for r in model["push_ping_sensitivity"]]
    days = [r["district_day"] for r in model["push_ping_sensitivity"]]
    assert pings[0] == 15 and days == sorted(days, reverse=True)  # fewer pings, cheaper


def test_every_price_names_its_page() -> None:
    assert set(cost.PRICE_SOURCES) == {f for f in vars(cost.Prices()) if not f.startswith("_")}
    assert all(url.startswith("https://aws.amazon.com/") for url in cost.PRICE_SOURCES.values())


def test_the_sse_poll_interval_that_meets_the_hour_goal() -> None:
    interval = cost.sse_idle_poll_for(cost.SSE_HOUR_GOAL, IDLE, ARM, cost.Prices())
    assert interval is not None and interval > 0.15
    # at that interval the idle hour costs the goal exactly
    polls = 3600 / interval
    idle = {**IDLE, "read_units": polls * 0.5, "polling_reads": polls}
    hour = cost.dollars(cost.sse_idle_hour(idle, ARM, cost.Prices()), cost.Prices(), "arm64")["total_usd"]
    assert hour == pytest.approx(cost.SSE_HOUR_GOAL, abs=2e-6)
    big = cost.Deployment(**{**vars(ARM), "memory_mb": {"StreamFunction": 256}})
    assert cost.sse_idle_poll_for(cost.SSE_HOUR_GOAL, IDLE, big, cost.Prices()) is None  # $0.012 before any read
