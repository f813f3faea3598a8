"""The record model, the layer everything else reads: one file's rules, no store-wide ones.

- ``records``: a record file's frontmatter (split, safe YAML load) and the ``Record`` it describes, with its issues.
- ``datevalues``: the date values records carry (a day or an instant) and query bounds.
- ``config``: ``knowtk.yaml``, the store's settings.
"""
