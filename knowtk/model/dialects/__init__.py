"""The profiles other than knowtk's own: the default plug-in of the ``knowtk_profiles`` hook (``knowtk.plugins``).

- ``plain``: any Markdown; the id from the path, the title from the first H1 or the file name.
- ``adr``: Architecture Decision Records (adr-tools, MADR 2/3/4, log4brains): status, replacement, date, number.
- ``obsidian``: an Obsidian vault: the file name as title, aliases, tags (frontmatter and inline), wikilinks.
- ``markdown``: the Markdown reading they share (lines outside code, headings).
"""

from knowtk.model.dialects import adr, obsidian, plain
from knowtk.model.profile import Profile

__all__ = ["adr", "knowtk_profiles", "obsidian", "plain"]


def knowtk_profiles() -> dict[str, Profile]:
    """The plug-in hook: profile name -> profile."""
    return {"adr": adr.adr, "obsidian": obsidian.obsidian, "plain": plain.plain}
