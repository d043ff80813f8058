"""Lambda function: GET /metadata: the tool manifest of a session."""

from relay_lambda import build

runtime = build(["metadata"])
handler = runtime.handler
