"""The harnesses the tests, the benchmarks and ``codap-relay local-api`` share: browsers and real CODAP, a fake
plugin and an SSE client, a Lambda context and harness, DynamoDB Local, servers and the relay's commands as child
processes. Fixtures stay in the tests' conftest.py files; what they and the tests build on lives here, imported by
its package name. Not used by the relay itself (like ``starlette.testclient``)."""

from pathlib import Path

# The source checkout this package runs from (an editable install): where .tools/, events/ and template.yaml are.
CHECKOUT = Path(__file__).resolve().parents[3]
ARTIFACTS = CHECKOUT / "test-artifacts"  # screenshots and pictures the tests leave for a person to look at
EVENTS = CHECKOUT / "events"  # the sample API Gateway events (also for sam local invoke)
