"""Docstrings and signatures written once: shared docstring text, keyword sets and accessor methods.

Text that several docstrings share is written once and put in place by :func:`doc` (the style of
GeoPandas' and pandas' ``doc`` decorator)::

    @doc(fit=_FIT_DOC)
    def visit_counts(released, points, **kwargs): ...

Placeholders are ``{name}`` for the names given, and only those: other braces (``{"tp", "atp"}``, a dict
in an example) are left alone, so templates need no escaping. A placeholder alone on its line takes a
block of several lines, each indented like the placeholder (an empty block removes the line); inline, a
value is inserted as it is.

The signatures of a family of functions are defined once too: :func:`shared_keywords` gives functions the
keyword parameters a ``TypedDict`` lists (for type checkers and for ``inspect.signature``, ``help`` and
Sphinx alike), and :func:`method_of` (or :func:`lazy_method_of`) makes an accessor method with the
signature and the docstring of the function it calls, without that function's first parameter.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Concatenate, ParamSpec, TypeVar

__all__ = ["doc", "fill", "lazy_method_of", "method_of", "shared_keywords"]

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
R = TypeVar("R")

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _block(value: str) -> list[str]:
    """A value as lines, without its common indentation and surrounding blank lines."""
    return inspect.cleandoc("\n" + value).split("\n") if "\n" in value else [value]


def fill(template: str, **params: str) -> str:
    r"""``template`` (a docstring, any indentation) with its ``{name}`` placeholders for ``params`` filled.

    The template's indentation is removed as :func:`inspect.cleandoc` does. A name in ``params`` that the
    template does not use is a ``KeyError`` (a typo would otherwise leave a placeholder in the rendered docs).

    Examples
    --------
    >>> print(fill("A {what}.\n\n    {body}\n    Keep {'braces'}.", what="cat", body="line 1\nline 2"))
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


def doc(**params: str) -> Callable[[F], F]:
    """Decorator: the decorated function's docstring with its placeholders filled (see :func:`fill`).

    Examples
    --------
    >>> @doc(what="points")
    ... def count(x):
    ...     '''Count the {what}.'''
    >>> count.__doc__
    'Count the points.'
    """

    def decorate(func: F) -> F:
        func.__doc__ = fill(func.__doc__ or "", **params)
        return func

    return decorate


def shared_keywords(spec: type) -> Callable[[F], F]:
    """Decorator: the function's ``**keywords`` are the keyword-only parameters ``spec`` lists.

    ``spec`` is a ``TypedDict`` (``total=False``) whose fields are ``Annotated[type, default]``: the one
    definition of the names, types and defaults a family of functions shares. Each function declares
    ``**name: Unpack[spec]`` after its own parameters, so a type checker flags an unknown keyword or a
    value of the wrong type; at run time the decorated function

    - has the signature of its own parameters followed by those of ``spec`` with their defaults (what
      :func:`inspect.signature`, ``help`` and Sphinx show),
    - refuses any other keyword with Python's own ``TypeError``, and
    - receives ``**name`` with every keyword of ``spec``, the defaults filled in.

    A ``TypedDict`` subclass adds to the keywords of its base. At decoration, a field without a default, a
    function without ``**keywords``, or one whose own parameter has the name of a shared keyword is a
    ``TypeError``.

    Examples
    --------
    >>> from typing import Annotated, TypedDict, Unpack
    >>> class Seeded(TypedDict, total=False):
    ...     rng: Annotated[int | None, None]
    ...     n_sims: Annotated[int, 16]
    >>> @shared_keywords(Seeded)
    ... def simulate(x, *, k=1, **kw: Unpack[Seeded]):
    ...     return x, k, kw
    >>> inspect.signature(simulate)
    <Signature (x, *, k=1, rng: 'int | None' = None, n_sims: 'int' = 16)>
    >>> simulate(0, n_sims=4)
    (0, 1, {'rng': None, 'n_sims': 4})
    >>> simulate(0, n_sim=4)
    Traceback (most recent call last):
    TypeError: simulate() got an unexpected keyword argument 'n_sim'
    """
    shared: list[inspect.Parameter] = []
    for name, hint in typing.get_type_hints(spec, include_extras=True).items():
        if typing.get_origin(hint) is not Annotated:
            raise TypeError(
                f"{spec.__name__}.{name} must be Annotated[type, default] (the default is missing)."
            )
        kind, default = typing.get_args(hint)[:2]
        annotation = inspect.formatannotation(kind)  # a string, as under `from __future__ import annotations`
        shared.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        )
    defaults = {p.name: p.default for p in shared}

    def decorate(func: F) -> F:
        sig = inspect.signature(func)
        params = list(sig.parameters.values())
        if not params or params[-1].kind is not inspect.Parameter.VAR_KEYWORD:
            raise TypeError(f"{func.__name__} must end with **keywords: Unpack[{spec.__name__}].")
        own = params[:-1]
        clash = sorted({p.name for p in own} & set(defaults))
        if clash:
            raise TypeError(
                f"{func.__name__}: {clash} are keywords of {spec.__name__}, not its own parameters."
            )
        accepted = {p.name for p in own if p.kind is not inspect.Parameter.POSITIONAL_ONLY} | set(defaults)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for name in kwargs:
                if name not in accepted:  # the words of Python's own error for an unknown keyword
                    raise TypeError(f"{func.__qualname__}() got an unexpected keyword argument {name!r}")
            return func(*args, **{**defaults, **kwargs})

        wrapper.__signature__ = sig.replace(parameters=[*own, *shared])  # type: ignore[attr-defined]
        return typing.cast(F, wrapper)  # called as func is, with the same keywords

    return decorate


#: The numpydoc sections, in numpydoc's order.
_SECTIONS = (
    "Parameters",
    "Returns",
    "Yields",
    "Other Parameters",
    "Raises",
    "Warns",
    "See Also",
    "Notes",
    "References",
    "Examples",
)
_RELATIVE_REFERENCE = re.compile(r"(:(?:func|class|data|mod):`~?)([A-Za-z_]\w*`)")


def _sections(text: str) -> tuple[str, dict[str, str]]:
    """The text before the first numpydoc section, and each section's body by its title."""
    head: list[str] = []
    bodies: dict[str, list[str]] = {}
    current, lines = head, text.split("\n")
    for line, below in zip(lines, [*lines[1:], ""], strict=True):
        if line in _SECTIONS and below == "-" * len(line):
            current = bodies.setdefault(line, [])
        else:
            current.append(line)  # a section's first line is its underline, dropped below
    return "\n".join(head).strip(), {t: "\n".join(b[1:]).strip("\n") for t, b in bodies.items()}


def _without_first_parameter(body: str) -> str:
    """A Parameters section without its first name (the entry too, if it documents that name alone)."""
    first, *rest = body.split("\n")
    names, sep, kind = first.partition(" : ")
    if ", " in names:
        return "\n".join([names.split(", ", 1)[1] + sep + kind, *rest])
    return "\n".join(rest[next((i for i, line in enumerate(rest) if line[:1].strip()), len(rest)) :])


def method_of(
    fn: Callable[Concatenate[Any, P], R], summary: str, *, function: str = "", **sections: str
) -> Callable[Concatenate[Any, P], R]:
    """An accessor method that calls ``fn`` with the accessor's object (``self._obj``) first.

    Written in the body of an accessor class (``perturb = method_of(perturb, "...")``), the method takes
    ``fn``'s signature (``self`` for its first parameter: what ``help`` and Sphinx show, and what a type
    checker checks calls against) and ``fn``'s docstring, with ``summary`` for its first paragraph, without
    the entry of that first parameter, with ``function`` first under See Also, and with ``sections`` for
    the sections they name. ``fn``'s references by bare name (``:func:`name```) are qualified with its
    public module, so they still name the same function in the accessor's docstring.

    Parameters
    ----------
    function : str, optional
        How See Also names ``fn`` (default: its public module and name), "the same as a function".
    **sections : str
        Replacement numpydoc sections, by title in lower case with ``_`` for spaces (``see_also``,
        ``examples``, ``raises`` ...); an empty text removes the section.

    Returns
    -------
    callable
        The method, named as ``fn`` in the class it is written in; ``fn`` is its ``__wrapped__``.

    Examples
    --------
    >>> def area(shape, *, scale=1.0):
    ...     '''Area of a shape.
    ...
    ...     Parameters
    ...     ----------
    ...     shape : float
    ...         The shape.
    ...     scale : float, default 1.0
    ...         The scale.
    ...     '''
    ...     return shape * scale
    >>> class Accessor:
    ...     def __init__(self, obj):
    ...         self._obj = obj
    ...     area = method_of(area, "Area of the accessor's shape.", function="area")
    >>> Accessor(3).area(scale=2.0), inspect.signature(Accessor.area)
    (6.0, <Signature (self, *, scale=1.0)>)
    >>> doc = Accessor.area.__doc__
    >>> doc.splitlines()[0], "shape :" in doc, "scale :" in doc, "area : the same as a function." in doc
    ("Area of the accessor's shape.", False, True, True)
    """
    caller = sys._getframe(1)  # the class body: the method belongs to its module (doctest finds its
    # examples there) and class
    method = _method(
        fn, summary, caller.f_globals, f"{caller.f_code.co_qualname}.{fn.__name__}", function, sections
    )
    return typing.cast(Callable[Concatenate[Any, P], R], method)


def _method(
    fn: Callable[..., Any],
    summary: str,
    namespace: dict[str, Any],
    qualname: str,
    function: str,
    sections: Any,
) -> Callable[..., Any]:
    """The method of :func:`method_of`, named ``qualname``, in the module of ``namespace``."""
    module = ".".join(part for part in fn.__module__.split(".") if not part.startswith("_"))
    text = _RELATIVE_REFERENCE.sub(rf"\g<1>{module}.\g<2>", inspect.cleandoc(fn.__doc__ or ""))
    head, bodies = _sections(text)
    bodies["Parameters"] = _without_first_parameter(bodies.get("Parameters", ""))
    own = [f"{function or f'{module}.{fn.__name__}'} : the same as a function.", bodies.get("See Also", "")]
    bodies["See Also"] = "\n".join(filter(None, own))
    bodies.update({key.replace("_", " ").title(): inspect.cleandoc(text) for key, text in sections.items()})
    paragraphs = [summary, *head.split("\n\n")[1:]]
    paragraphs += [f"{t}\n{'-' * len(t)}\n{bodies[t]}" for t in _SECTIONS if bodies.get(t)]

    def call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        return fn(self._obj, *args, **kwargs)

    name = qualname.rsplit(".", 1)[-1]
    method = types.FunctionType(call.__code__, namespace, name, None, call.__closure__)
    sig = inspect.signature(fn)
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    rest = list(sig.parameters.values())[1:]
    method.__signature__ = sig.replace(parameters=[self_parameter, *rest])  # type: ignore[attr-defined]
    method.__qualname__ = qualname
    method.__doc__ = "\n\n".join(paragraphs)
    method.__wrapped__ = fn  # type: ignore[attr-defined]
    return method


class lazy_method_of:  # lower case: written like method_of, as a call in a class body
    """:func:`method_of` for the function ``target`` (``"module:name"``), imported on the method's first use.

    A descriptor: the method (its signature and docstring too) is built when the class attribute is first
    read, and replaces it on the class, so a class can offer the functions of a module that is slow to
    import without importing it.

    Parameters
    ----------
    target : str
        The function, as ``"package.module:function"``.
    summary, function, **sections : str
        As in :func:`method_of`; the method's name is that of the class attribute.

    Examples
    --------
    >>> class Accessor:
    ...     def __init__(self, obj):
    ...         self._obj = obj
    ...     dedent = lazy_method_of("textwrap:dedent", "The text without its common indentation.")
    >>> Accessor("  a").dedent(), Accessor.dedent.__wrapped__.__module__
    ('a', 'textwrap')
    """

    def __init__(self, target: str, summary: str, *, function: str = "", **sections: str) -> None:
        self.target, self.summary, self.function, self.sections = target, summary, function, sections

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type) -> Any:
        module, _, attr = self.target.partition(":")
        fn = getattr(importlib.import_module(module), attr)
        qualname, namespace = f"{owner.__qualname__}.{self.name}", vars(sys.modules[owner.__module__])
        method = _method(fn, self.summary, namespace, qualname, self.function, self.sections)
        setattr(owner, self.name, method)  # built once: later uses find the method itself
        return method if obj is None else method.__get__(obj, owner)
