"""Placeholder: replaced by its owner (see CONTRACT)."""

