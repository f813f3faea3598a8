"""The profiles other than knowtk's own, each registering itself on import (``knowtk.model.profile``).

- ``plain``: any Markdown; the id from the path, the title from the first H1 or the file name.
- ``adr``: Architecture Decision Records (adr-tools, MADR 2/3/4, log4brains): status, replacement, date, number.
- ``obsidian``: an Obsidian vault: the file name as title, aliases, tags (frontmatter and inline), wikilinks.
- ``markdown``: the Markdown reading they share (lines outside code, headings).
"""

from knowtk.model.dialects import adr, obsidian, plain

__all__ = ["adr", "obsidian", "plain"]
