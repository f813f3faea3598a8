"""``python -m knowtk``: the ``knowtk`` command line (a running ``knowtk serve`` answers its queries first)."""

from knowtk.serve.client import main

if __name__ == "__main__":
    raise SystemExit(main())
