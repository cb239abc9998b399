"""The shared-docstring machinery (geoldp._core.docstrings) and where the package uses it."""

from __future__ import annotations

import inspect
import typing
from typing import Annotated, TypedDict, Unpack

import pytest

from geoldp import accessor, estimate
from geoldp._core.docstrings import doc, fill, lazy_method_of, method_of, shared_keywords


def test_fill_indents_a_block_like_its_placeholder_and_leaves_other_braces():
    out = fill(
        """Head {x}.

        Parameters
        ----------
            {block}
        keep : {"a", "b"}""",
        x="one",
        block="a : int\n    The a.",
    )
    assert out.splitlines() == [
        "Head one.",
        "",
        "Parameters",
        "----------",
        "    a : int",
        "        The a.",
        'keep : {"a", "b"}',
    ]


def test_fill_drops_the_line_of_an_empty_block_and_refuses_unknown_names():
    assert fill("A\n\n{gone}\nB", gone="") == "A\n\nB"
    with pytest.raises(KeyError, match="typo"):
        fill("A {x}", x="1", typo="2")


def test_doc_fills_the_docstring_of_the_function_it_decorates():
    @doc(who="functions", body="line 1\nline 2")
    def f():
        """For {who}.

        {body}
        """

    assert f.__doc__ == "For functions.\n\nline 1\nline 2"
    with pytest.raises(KeyError, match="typo"):
        doc(typo="x")(f)


class _Seeded(TypedDict, total=False):
    rng: Annotated[int | None, None]
    level: Annotated[float, 0.95]


def test_shared_keywords_refuses_a_definition_it_cannot_turn_into_a_signature():
    class NoDefault(TypedDict, total=False):
        level: float

    with pytest.raises(TypeError, match=r"NoDefault\.level must be Annotated\[type, default\]"):
        shared_keywords(NoDefault)
    with pytest.raises(TypeError, match=r"must end with \*\*keywords"):

        @shared_keywords(_Seeded)
        def f(*, level=0.95):
            pass

    with pytest.raises(TypeError, match=r"\['level'\] are keywords of _Seeded"):

        @shared_keywords(_Seeded)
        def g(*, level=0.9, **kw: Unpack[_Seeded]):
            pass


def test_shared_keywords_fills_the_defaults_and_keeps_python_errors():
    @shared_keywords(_Seeded)
    def f(x, /, y, *, k=1, **kw: Unpack[_Seeded]):
        return x, y, k, kw

    assert f(0, 1, level=0.5) == (0, 1, 1, {"rng": None, "level": 0.5})
    assert f(0, y=1, k=2) == (0, 1, 2, {"rng": None, "level": 0.95})
    with pytest.raises(TypeError, match=r"^test_shared.*\.f\(\) got an unexpected keyword argument 'x'$"):
        f(0, 1, x=2)  # positional-only: not a keyword
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'y'"):
        f(0)


def area(shape, *, scale=1.0):
    """Area of a shape, as in :func:`fill`.

    Parameters
    ----------
    shape, unit : float
        The shape, as :func:`fill` takes it.
    scale : float, default 1.0
        The scale.

    See Also
    --------
    fill : the placeholder filler.

    Examples
    --------
    >>> area(2.0)
    """
    return shape * scale


_area = area  # in the class body below, ``area`` is the method once it is defined


class _Accessor:
    def __init__(self, obj):
        self._obj = obj

    area = method_of(area, "Area of this shape.", function="area", examples=">>> A(2.0).area()")
    size = lazy_method_of(f"{__name__}:_area", "Size of this shape.", see_also="", notes="Also a size.")


def test_method_of_makes_a_method_of_the_class_it_is_written_in():
    assert _Accessor(3).area(scale=2.0) == 6.0 and _Accessor(3).size() == 3
    assert (_Accessor.area.__qualname__, _Accessor.area.__module__) == ("_Accessor.area", __name__)
    assert (_Accessor.size.__name__, _Accessor.size.__qualname__) == ("size", "_Accessor.size")
    assert list(inspect.signature(_Accessor(3).area).parameters) == ["scale"]
    # the function's docstring: the summary replaced, the first name gone, bare references qualified
    assert _Accessor.area.__doc__ == inspect.cleandoc(
        f"""Area of this shape.

        Parameters
        ----------
        unit : float
            The shape, as :func:`{__name__}.fill` takes it.
        scale : float, default 1.0
            The scale.

        See Also
        --------
        area : the same as a function.
        fill : the placeholder filler.

        Examples
        --------
        >>> A(2.0).area()"""
    )
    assert _Accessor.size.__doc__.endswith(
        "The scale.\n\nNotes\n-----\nAlso a size.\n\nExamples\n--------\n>>> area(2.0)"
    )


def test_the_estimators_take_the_one_shared_definition():
    hints = typing.get_type_hints(estimate._EstimateKeywords, include_extras=True)
    shared = {n: h.__metadata__[0] for n, h in hints.items()}
    assert set(shared) >= {"mechanism", "epsilon", "rng", "n_boot", "level", "fit_rows"}
    for fn in (
        estimate.fit,
        estimate.visit_counts,
        estimate.range_counts,
        estimate.od_flows,
        estimate.hotspots,
        estimate.denoise,
    ):
        params = inspect.signature(fn).parameters
        taken = {n: params[n].default for n in shared if n in params}
        assert taken == {n: v for n, v in shared.items() if n in taken}, fn.__name__
        assert all(params[n].kind is inspect.Parameter.KEYWORD_ONLY for n in taken), fn.__name__
        assert set(taken) == set(shared) - ({"n_boot", "level"} if fn is estimate.denoise else set())
        assert "{" + "fit}" not in fn.__doc__  # every template filled
        # the block of shared parameters is written once and appears in every docstring that takes them
        if fn is not estimate.denoise:  # denoise documents its subset as "As in visit_counts"
            assert inspect.cleandoc(estimate._FIT_DOC) in inspect.getdoc(fn), fn.__name__


def test_an_accessor_method_documents_its_function_without_the_frame():
    for name in ("perturb", "snap"):
        method, function = getattr(accessor.LDPAccessor, name), getattr(accessor, name)
        assert "gdf : " in function.__doc__ and "gdf : " not in method.__doc__
        params = function.__doc__.split("Parameters\n    ----------\n")[1].split("\n\n")[0]
        assert inspect.cleandoc(params.split("\n    points")[1]) in method.__doc__, name
        assert f"geoldp.accessor.{name} : the same as a function." in method.__doc__
    # the estimators (frame.ldp.estimate.<name>): the function of the same name in geoldp.estimate,
    # imported on first use
    for function in estimate.__all__:
        if function == "Population":
            continue
        method = getattr(accessor.EstimateAccessor, function)
        assert method.__wrapped__ is getattr(estimate, function) and method.__name__ == function
        assert f"geoldp.estimate.{function} : the same as a function." in method.__doc__
        assert (
            "Post-processing: reads only this release" in method.__doc__
            and "released : " not in method.__doc__
        )


def test_the_accessor_evaluate_takes_the_signature_of_metrics_evaluate():
    # the method shows its parameters (help, introspection); they are the function's
    from geoldp import metrics

    def keyword_defaults(fn):
        params = inspect.signature(fn).parameters.values()
        return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}

    method = accessor.LDPAccessor.evaluate
    assert keyword_defaults(method)  # a non-empty definition: the check below has something to compare
    assert keyword_defaults(method) == keyword_defaults(metrics.evaluate)
    assert (
        list(inspect.signature(method).parameters)[1]
        == list(inspect.signature(metrics.evaluate).parameters)[1]
    )
