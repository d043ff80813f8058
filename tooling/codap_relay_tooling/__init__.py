"""codap-relay-tooling: what developers and tests run beside the relay, never what it deploys.

``localapi`` is ``codap-relay local-api`` (the deployed stack on one machine); ``testing`` holds the harnesses the
tests and the benchmarks share (browsers, real CODAP, DynamoDB Local, a fake plugin, the Lambda harness, ...).
The Lambda layer and the codap-relay wheel do not carry it: install it from the checkout with
``pip install -e ./tooling``."""

__version__ = "1.0.0"
