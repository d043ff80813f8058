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
    # issue 44's district: 300 classes x 30 tabs x 5 h, 180 calls a class-hour
    assert sse["district_class_day"]["total_usd"] == pytest.approx(45_000 * hour + 270_000 * per_call, rel=1e-3)
    assert push["class_hour"]["total_usd"] < sse["class_hour"]["total_usd"] / 5
    goals = {g["goal"]: g for g in model["goals"]}
    assert len(goals) == 5
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


# The push channel as bench.deployed counts it: a ping (its session read, presence write, push-function call and two
# messages), a reconnect ($disconnect, $connect, attach), a call over push without pings.
PING = {
    "read_units": 1.0,
    "write_units": 1.0,
    "push_invocations": 1.0,
    "push_billed_ms": 30.0,
    "websocket_messages": 2.0,
    "dynamodb_by_operation": {"GetItem": 1.0, "UpdateItem": 1.0},
}
RECONNECT = {
    "read_units": 2.5,
    "write_units": 1.0,
    "push_invocations": 3.0,
    "push_billed_ms": 90.0,
    "websocket_messages": 2.0,
}
PUSH_CALL = {**CALL, "read_units": 6.0, "websocket_messages": 1.0, "largest_message_bytes": 200}
MEASURED = {"ping_seconds": 1, "ping": PING, "reconnect": RECONNECT, "kinds": {"http_wait": PUSH_CALL}}
PUSH_ARM = cost.Deployment(**{**vars(ARM), "memory_mb": {**(ARM.memory_mb or {}), "PushFunction": 128}})


def test_measured_push_hour_is_the_counted_ping_at_the_templates_interval() -> None:
    usage = cost.measured_push_idle_hour(MEASURED, PUSH_ARM)
    pings, connects = 3600 / 15, 3600 / cost.PUSH_CONNECTION_SECONDS  # ARM's ping: 15 s; a reconnect every 2 h
    assert usage.read_units == pytest.approx(pings * 1.0 + connects * 2.5)
    assert usage.write_units == pytest.approx(pings * 1.0 + connects * 1.0)
    assert usage.lambda_requests == pytest.approx(pings + connects * 3)
    assert usage.websocket_messages == pytest.approx(2 * pings + connects * 2)
    billed_s = (pings * 30 + connects * 90) / 1000
    assert usage.lambda_gb_seconds == pytest.approx(billed_s * 128 / 1024)  # the push function's own memory
    assert usage.websocket_connection_minutes == 60 and usage.api_requests == 0
    at_90 = cost.measured_push_idle_hour(MEASURED, PUSH_ARM, 90)
    assert at_90.write_units == pytest.approx(40 + connects)  # each ping refreshes the presence, at any interval
    # no reconnect counted (a partial run): the connect's assumptions stand in for it
    alone = cost.measured_push_idle_hour({"ping": PING}, PUSH_ARM)
    assert alone.lambda_requests == pytest.approx(pings + connects * cost.PUSH_INVOCATIONS_PER_CONNECT)


def test_measured_push_call_is_priced_as_counted() -> None:
    usage = cost.measured_push_call(PUSH_CALL, PUSH_ARM, cost.Prices())
    assert usage.read_units == 6.0 and usage.write_units == 12.0  # nothing taken off: no stream ran beside it
    assert usage.lambda_gb_seconds == pytest.approx(0.08 * 256 / 1024 + 0.02 * 512 / 1024)
    assert usage.api_requests == usage.lambda_requests == 2 and usage.websocket_messages == 1
    big = cost.measured_push_call({**PUSH_CALL, "largest_message_bytes": 40_000}, PUSH_ARM, cost.Prices())
    assert big.websocket_messages == 2  # a message over 32 KB is metered as two


def test_the_model_prices_push_from_its_counts_and_falls_back_without_them() -> None:
    prices = cost.Prices()
    measured = cost.model({"idle": IDLE, "kinds": {"http_wait": CALL}, "push": MEASURED}, PUSH_ARM, prices)
    assert measured["push_source"] == "measured"
    push = measured["channels"]["websocket"]["scenarios"]
    hour = cost.dollars(cost.measured_push_idle_hour(MEASURED, PUSH_ARM), prices, "arm64")["total_usd"]
    call = cost.dollars(cost.measured_push_call(PUSH_CALL, PUSH_ARM, prices), prices, "arm64")["total_usd"]
    assert push["idle_plugin_hour"]["total_usd"] == hour
    assert push["class_hour"]["total_usd"] == pytest.approx(30 * hour + 300 * call, rel=1e-3)
    assert "measured" in next(g["why"] for g in measured["goals"] if g["goal"].startswith("push channel class"))
    assert set(measured["per_1000_push"]) == {"http_wait"}
    first = measured["push_ping_sensitivity"][0]
    at_15 = cost.dollars(cost.measured_push_idle_hour(MEASURED, PUSH_ARM, 15), prices, "arm64")["total_usd"]
    assert first["ping_seconds"] == 15 and first["idle_plugin_hour"] == at_15
    # the SSE channel is the same either way
    derived = cost.model({"idle": IDLE, "kinds": {"http_wait": CALL}}, PUSH_ARM, prices)
    assert derived["push_source"] == "derived" and derived["channels"]["sse"] == measured["channels"]["sse"]
    old_hour = cost.dollars(cost.push_idle_hour(IDLE, PUSH_ARM, prices), prices, "arm64")["total_usd"]
    assert derived["channels"]["websocket"]["scenarios"]["idle_plugin_hour"]["total_usd"] == old_hour


def test_a_ping_and_a_reconnect_from_a_phases_counts() -> None:
    from bench import deployed

    phase = {
        "seconds": 10.0,
        "dynamodb": {"requests": {"GetItem": 6, "UpdateItem": 6}, "read_units": 6.0, "write_units": 6.0, "errors": {}},
        "lambda": {"PushFunction": {"invocations": 6, "ms": 170.0, "billed_ms": 180}},
    }
    ping = deployed.per_ping(phase, {"in:ping": 6, "out:heartbeat": 6})
    assert ping["read_units"] == ping["write_units"] == ping["push_invocations"] == 1
    assert ping["push_billed_ms"] == 30 and ping["websocket_messages"] == 2 and ping["pings"] == 6
    # two reconnects with one ping between them: the ping's share comes off
    phase = {
        "seconds": 1.0,
        "dynamodb": {"requests": {"GetItem": 7, "UpdateItem": 3}, "read_units": 6.0, "write_units": 3.0, "errors": {}},
        "lambda": {"PushFunction": {"invocations": 7, "ms": 200.0, "billed_ms": 210}},
    }
    messages = {"in:attach": 2, "out:resumed": 2, "in:ping": 1, "out:heartbeat": 1}
    reconnect = deployed.per_reconnect(phase, messages, ping, 2)
    assert reconnect["read_units"] == 2.5 and reconnect["write_units"] == 1 and reconnect["push_invocations"] == 3
    assert reconnect["push_billed_ms"] == 90 and reconnect["websocket_messages"] == 2
    assert reconnect["dynamodb_by_operation"] == {"GetItem": 3, "UpdateItem": 1}
