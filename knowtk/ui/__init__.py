"""The widget and HTML parts that the notebook front ends and the query lab share.

``style``
    one style sheet whose colours are JupyterLab's theme variables, and the small HTML pieces
    built on it (``wrap``, ``banner``, ``escape``).
``rows``
    compact, selectable result rows (``Row``, ``RowList``): click one and its detail opens under it.
``front``
    ``Front``: a widget whose MIME bundle also carries a static HTML copy of itself.

It sits below ``knowtk.notebook`` and ``knowtk.lab``, which never import each other, and needs
nothing else of knowtk.
"""
