import importlib.util
import sys

if importlib.util.find_spec("codap_relay_tooling") is None or importlib.util.find_spec("matplotlib") is None:
    # ./scripts/serve's install (the aws and mcp extras) leaves out what the benchmarks run on.
    sys.exit(
        "python -m bench needs the developer install (the tooling package beside the relay, and the bench extra): "
        "run ./scripts/bench instead, which makes it in .venv first and then runs this with your arguments"
    )

from bench.relay_bench import main

sys.exit(main())
