"""Empty stand-in: imported, never used, by the annotated transformer."""
