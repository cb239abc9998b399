"""The shared-docstring machinery (geoldp._core.docstrings) and where the package uses it."""

from __future__ import annotations

import inspect
import typing
from typing import Annotated, TypedDict, Unpack

import pytest

from geoldp import accessor, estimate
from geoldp._core import docstrings as _docstrings
from geoldp._core.docstrings import doc, fill, method_of, shared_keywords


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


def test_doc_reuses_the_unfilled_template_of_another_function():
    @doc(who="functions")
    def f():
        """For {who}."""

    @doc(f, who="methods")
    def g():
        pass

    assert (f.__doc__, g.__doc__) == ("For functions.", "For methods.")


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
    """Area of the {what}."""
    return shape * scale


class _Accessor:
    def __init__(self, obj):
        self._obj = obj

    area = method_of(area, what="shape")


def test_method_of_makes_a_method_of_the_class_it_is_written_in():
    assert _Accessor(3).area(scale=2.0) == 6.0 and _Accessor.area.__doc__ == "Area of the shape."
    assert (_Accessor.area.__qualname__, _Accessor.area.__module__) == ("_Accessor.area", __name__)
    assert list(inspect.signature(_Accessor(3).area).parameters) == ["scale"]


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


def test_an_accessor_method_and_its_function_share_one_template():
    for name in ("perturb", "snap"):
        method = getattr(accessor.LDPAccessor, name)
        assert method._doc_template.startswith(getattr(accessor, name)._doc_template), name
        assert "{" + "frame_parameter}" not in method.__doc__
        assert "gdf : " in getattr(accessor, name).__doc__ and "gdf : " not in method.__doc__
    template = _docstrings.fill(accessor._ESTIMATOR_METHOD)
    from_template = [
        n for n, f in vars(accessor.LDPAccessor).items() if getattr(f, "_doc_template", None) == template
    ]
    # the estimator methods (fit_population, estimate_*, denoise): one docstring template, filled apart
    estimators = {n for n in vars(accessor.LDPAccessor) if n.startswith("estimate_")} | {
        "fit_population",
        "denoise",
    }
    assert set(from_template) == estimators and len(estimators) == 6


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
