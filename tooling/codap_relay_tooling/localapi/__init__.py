"""``codap-relay local-api``: the deployed stack (API Gateway's REST stage, one process per Lambda function
instance, the stream behind a Web Adapter-style proxy) on one machine, from template.yaml.

template (the stack the template describes) -> routing (which route answers) -> events (the proxy event and the
answer's mapping) -> instances (function processes and their pools) -> gateway (the ASGI front) -> server
(assembly); runtime is the program each buffered function's process runs; websocket is the template's WebSocket
API (the push channel) on a port of its own, which the gateway hands that port's requests to.
"""
