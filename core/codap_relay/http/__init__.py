"""The HTTP entry point: a Starlette app over the core, used by the local server and every Lambda handler."""
