"""Estimates as GIS layers (placeholder filled below)."""
