"""Exceptions and warnings raised by geoldp.

All geoldp exceptions derive from :class:`GeoLDPError` and also from a built-in exception, so callers
that catch ``ValueError`` keep working. Warnings derive from :class:`GeoLDPWarning`.
"""

from __future__ import annotations

__all__ = ["BudgetError", "DomainError", "GeoLDPError", "GeoLDPWarning", "PrivacyWarning"]


class GeoLDPError(Exception):
    """Root of all geoldp exceptions."""


class BudgetError(GeoLDPError, ValueError):
    """A privacy-budget split is invalid (negative fractions, or fractions that do not sum to 1)."""


class DomainError(GeoLDPError, ValueError):
    """An input lies outside the domain a mechanism is defined on."""


class GeoLDPWarning(UserWarning):
    """Root of all geoldp warnings (e.g. duplicate public locations)."""


class PrivacyWarning(GeoLDPWarning):
    """A configuration is legal but weakens the privacy story (ε > 10, kept attribute columns)."""


# Named by their public home, so that tracebacks, warnings filters and pickles say ``geoldp.BudgetError``.
for _cls in (GeoLDPError, BudgetError, DomainError, GeoLDPWarning, PrivacyWarning):
    _cls.__module__ = "geoldp"
del _cls
