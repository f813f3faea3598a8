"""The agent front end: every knowtk tool served over MCP (``knowtk mcp``).

``agent``
    what an agent reads, testable without the SDK: tool descriptions, compact list rows,
    output schemas, refusals as payloads.
``guide``
    the agents guide: every rule in full, every argument and answer schema (the resource ``knowtk://docs/agents``).
``server``
    the server on the official ``mcp`` SDK (the ``knowtk[mcp]`` extra), a thin layer over ``agent``: tools,
    resources, refusals; stdio.
``http``
    ``--http``: the SDK's Streamable HTTP transport behind Host, Origin and bearer-token checks.
``commands``
    the ``knowtk mcp`` subcommand, a plug-in of the command line (``knowtk.plugins``).
"""
