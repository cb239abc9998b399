"""Placeholder: replaced by its owner (see CONTRACT)."""

def show_versions():
    raise NotImplementedError
