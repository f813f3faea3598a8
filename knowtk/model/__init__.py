"""knowtk.model."""
