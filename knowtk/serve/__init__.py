"""``knowtk serve``: an optional long-lived server that the command line forwards read-only queries to.

    client      the CLI's side, run before anything heavy is imported: the socket of a store's server
                (its key: the store, the state, the profile, knowtk's code), and forwarding one command
                line to it, falling back to the local run on any failure (docs/server.md)
    server      the server's side: one open Store, a unix socket, requests answered one at a time,
                each reconciled at query time like any Store call
    commands    the ``knowtk serve`` subcommand (a plug-in of ``knowtk.cli``)

The package is the top layer: the server runs the CLI's own commands (``knowtk.cli.serve_request``)
so that a forwarded answer is the local one, byte for byte. ``knowtk.cli`` never imports it by name:
``python -m knowtk`` starts in ``client.main``, and the CLI loads ``client`` and ``commands`` as it
loads plug-ins.
"""
