"""knowtk.index."""
