"""Child process for the cold-start measurements; kept free of imports so it does not skew ``-X importtime``.

``coldstart_probe.py import PATH``: load a Lambda handler module as Lambda would at init; print the seconds.
``coldstart_probe.py invoke PATH EVENT.json``: under moto, create the table, load the module, invoke it twice.
"""

import importlib.util
import json
import os
import sys
import time


def load(path: str) -> object:
    sys.path.insert(0, os.path.dirname(path))  # a handler may import its siblings, as in its deployment package
    spec = importlib.util.spec_from_file_location("lambda_handler_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "import":
        print("--- bench: loading the handler module ---", file=sys.stderr, flush=True)
        started, cpu = time.perf_counter(), time.process_time()
        load(path)
        print(
            json.dumps({"init_seconds": time.perf_counter() - started, "init_cpu_seconds": time.process_time() - cpu})
        )
        return
    from moto import mock_aws

    from codap_relay.sam_template import default_template, load_template
    from codap_relay.store.dynamodb.table import create_table, table_definition
    from codap_relay_tooling.testing.lambda_context import LambdaContext

    with mock_aws():
        import boto3

        table = os.environ["BENCH_TABLE"]
        create_table(
            boto3.client("dynamodb", region_name="us-east-1"),
            table,
            table_definition(load_template(default_template())),
        )
        started = time.perf_counter()
        module = load(path)
        init = time.perf_counter() - started
        with open(sys.argv[3]) as f:
            event = json.load(f)
        handler = module.handler  # type: ignore[attr-defined]
        times = []
        cpu_times = []
        statuses = []
        for _ in range(2):
            started, cpu = time.perf_counter(), time.process_time()
            context = LambdaContext(function_name="codap-relay-bench", aws_request_id="bench-invocation")
            result = handler(event, context)
            times.append(time.perf_counter() - started)
            cpu_times.append(time.process_time() - cpu)
            statuses.append(result.get("statusCode") if isinstance(result, dict) else None)
        print(
            json.dumps(
                {
                    "init_seconds": init,
                    "first_seconds": times[0],
                    "first_cpu_seconds": cpu_times[0],
                    "warm_seconds": times[1],
                    "warm_cpu_seconds": cpu_times[1],
                    "statuses": statuses,
                }
            )
        )


if __name__ == "__main__":
    main()
