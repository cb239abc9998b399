"""Campaign commands (placeholder)."""
