"""The HTTP API server (Starlette on uvicorn) and the ``weave`` command line."""
