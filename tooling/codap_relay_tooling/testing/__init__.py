"""Stand-ins for the parts of the deployed world that the tests, the benchmarks and ``codap-relay local-api``
share: a fake plugin and an SSE client, a Lambda context, DynamoDB Local, servers on loopback. Not used by the
relay itself (like ``starlette.testclient``)."""

from pathlib import Path

# The source checkout this package runs from (an editable install): where .tools/ and template.yaml are.
CHECKOUT = Path(__file__).resolve().parents[3]
