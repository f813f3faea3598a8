"""``knowtk lint``: the store's chains, links, dates and frontmatter checked as rules, for CI and review.

- ``rules``: the rules (id, default severity, message, doc with an example) and ``Finding``;
- ``settings``: which rules run at which severity, and the paths left out (``knowtk.yaml``'s ``lint:``);
- ``where``: the file line a finding names, read from the file only for the files with findings;
- ``store_checks``: what the snapshot knows (coverage issues, chains, dependencies, dates);
- ``adr_checks``: what only ADR folders write (both sides of a supersession, status words, numbers);
- ``links``: Markdown links, Obsidian ``[[wikilinks]]`` and heading anchors;
- ``link_cache``: each file content's links, kept beside the state so a later lint reads only changed files;
- ``formats``: the findings as text, JSON, GitHub Actions annotations and SARIF 2.1.0;
- ``run``: ``lint``, the runner of the ``knowledge_lint`` tool.
"""
