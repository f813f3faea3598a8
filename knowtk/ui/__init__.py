"""knowtk.ui."""
