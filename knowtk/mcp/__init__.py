"""The agent front end: every knowtk tool served over MCP (``knowtk mcp``).

``agent``
    what an agent reads, testable without the SDK: tool descriptions, compact list rows,
    output schemas, refusals as payloads.
``server``
    the stdio server on the official ``mcp`` SDK (the ``knowtk[mcp]`` extra), a thin layer over ``agent``.
``commands``
    the ``knowtk mcp`` subcommand, a plug-in of the command line (``knowtk.cli.DEFAULT_PLUGINS``).
"""
