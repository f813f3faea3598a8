"""``python -m knowtk``: the ``knowtk`` command line."""

from knowtk.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
