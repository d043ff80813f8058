#!/bin/sh
# Started by the Lambda Web Adapter (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap), which proxies each invocation to
# this server as plain HTTP and streams the answer back. /opt/python is the CoreLayer.
export PYTHONPATH="/opt/python:${LAMBDA_TASK_ROOT}:${PYTHONPATH}"
exec python -m uvicorn --host 127.0.0.1 --port "${PORT:-8080}" --no-access-log --timeout-graceful-shutdown 2 app:app
