"""Lambda function: POST /api/sessions, GET and DELETE /api/sessions/{code}, GET /api/sessions/{code}/log"""

from relay_lambda import build

runtime = build(["sessions"])
handler = runtime.handler
