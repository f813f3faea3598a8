"""knowtk.mcp."""
