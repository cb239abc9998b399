"""Docstrings written once: a decorator that fills shared templates and parameter blocks.

The style of GeoPandas' and pandas' ``doc`` decorator: a function or an accessor method that says what
another one says takes its docstring from a template, with the parts that differ given as keywords::

    @doc(_TEMPLATE, summary="Estimated visits.", function="visit_counts")
    def estimate_visits(self, points, **kwargs): ...

Placeholders are ``{name}`` for the names given, and only those: other braces (``{"tp", "atp"}``, a dict
in an example) are left alone, so templates need no escaping. A placeholder alone on its line takes a
block of several lines, each indented like the placeholder (an empty block removes the line); inline, a
value is inserted as it is.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["doc", "fill", "shares_parameters"]

F = TypeVar("F", bound=Callable[..., Any])

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _block(value: str) -> list[str]:
    """A value as lines, without its common indentation and surrounding blank lines."""
    return inspect.cleandoc("\n" + value).split("\n") if "\n" in value else [value]


def fill(template: str, **params: str) -> str:
    """``template`` (a docstring, any indentation) with its ``{name}`` placeholders for ``params`` filled.

    Parameters
    ----------
    template : str
        The text; its indentation is removed as Python's :func:`inspect.cleandoc` does.
    **params : str
        The value of each placeholder. A name the template does not use is an error (a typo would
        otherwise leave a placeholder in the rendered docs).

    Returns
    -------
    str
        The filled text, not indented.

    Raises
    ------
    KeyError
        A name in ``params`` that is not a placeholder of ``template``.

    Examples
    --------
    >>> print(fill("A {what}.\\n\\n    {body}\\n    Keep {'braces'}.", what="cat", body="line 1\\nline 2"))
    A cat.
    <BLANKLINE>
    line 1
    line 2
    Keep {'braces'}.
    """
    text = inspect.cleandoc(template)
    unused = set(params) - set(_PLACEHOLDER.findall(text))
    if unused:
        raise KeyError(f"fill: no placeholder {sorted(unused)} in the template.")
    out: list[str] = []
    for line in text.split("\n"):
        indent = line[: len(line) - len(line.lstrip())]
        alone = _PLACEHOLDER.fullmatch(line.strip())
        if alone and alone.group(1) in params:
            if not params[alone.group(1)]:
                continue  # an empty block leaves no blank line behind (numpydoc sections stay intact)
            out.extend(indent + part if part else "" for part in _block(params[alone.group(1)]))
            continue

        def value(m: re.Match[str], indent: str = indent) -> str:
            name = m.group(1)
            if name not in params:
                return m.group(0)
            return ("\n" + indent).join(_block(params[name]))

        out.append(_PLACEHOLDER.sub(value, line))
    return "\n".join(out).rstrip()  # an empty last block leaves no trailing blank line


def doc(*templates: str | Callable[..., Any], **params: str) -> Callable[[F], F]:
    """Decorator: the docstring of the decorated function, then ``templates``, filled with ``params``.

    Parameters
    ----------
    *templates : str or callable
        Text appended after the decorated function's own docstring (if it has one); a callable
        decorated with :func:`doc` contributes its *unfilled* template, so one template can serve a
        function and the accessor method that wraps it with other values.
    **params : str
        Placeholder values (see :func:`fill`).

    Returns
    -------
    callable
        The decorator; it sets ``__doc__`` and keeps the unfilled template on ``_doc_template``.

    Examples
    --------
    >>> @doc(what="points")
    ... def count(x):
    ...     '''Count the {what}.'''
    >>> @doc(count, what="zones")
    ... def count_zones(x): ...
    >>> count.__doc__, count_zones.__doc__
    ('Count the points.', 'Count the zones.')
    """

    def decorate(func: F) -> F:
        parts = [inspect.cleandoc(func.__doc__)] if func.__doc__ else []
        for t in templates:
            text = t if isinstance(t, str) else getattr(t, "_doc_template", None) or t.__doc__ or ""
            parts.append(inspect.cleandoc(text))
        template = "\n\n".join(parts)
        func._doc_template = template  # type: ignore[attr-defined]
        func.__doc__ = fill(template, **params)
        return func

    return decorate


def shares_parameters(defaults: dict[str, Any], *, without: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Decorator: the function takes the keyword-only parameters ``defaults`` (minus ``without``) with
    those defaults, or the import fails with the parameter named.

    The signature of a family of functions (spelt out in each, for introspection and help) is thereby
    defined once: a function that drifts from the definition is caught when its module is imported.

    Parameters
    ----------
    defaults : dict
        Parameter name -> default, the one definition.
    without : tuple of str, default ()
        Names of ``defaults`` this function does not take.

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.

    Raises
    ------
    TypeError
        At decoration, naming the parameter that is missing, not keyword-only or has another default.

    Examples
    --------
    >>> @shares_parameters({"rng": None})
    ... def f(x, *, rng=None): ...
    >>> @shares_parameters({"rng": None})
    ... def g(x, *, rng=0): ...
    Traceback (most recent call last):
    TypeError: g: parameter 'rng' must be keyword-only with default None (the shared definition).
    """

    def decorate(func: F) -> F:
        params = inspect.signature(func).parameters
        for name, default in defaults.items():
            if name in without:
                continue
            p = params.get(name)
            ok = (
                p is not None
                and p.kind is inspect.Parameter.KEYWORD_ONLY
                and type(p.default) is type(default)
                and p.default == default
            )
            if not ok:
                raise TypeError(
                    f"{func.__name__}: parameter {name!r} must be keyword-only with default {default!r} "
                    "(the shared definition)."
                )
        return func

    return decorate
