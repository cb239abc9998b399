"""The shared-docstring machinery (geoldp._docstrings) and where the package uses it."""

from __future__ import annotations

import inspect

import pytest

from geoldp import _docstrings, accessor, estimate
from geoldp._docstrings import doc, fill, shares_parameters


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


def test_shares_parameters_names_the_parameter_that_drifts():
    with pytest.raises(TypeError, match="'level'"):

        @shares_parameters({"level": 0.95})
        def f(*, level=0.9):
            pass

    with pytest.raises(TypeError, match="'level'"):  # positional, not keyword-only

        @shares_parameters({"level": 0.95})
        def g(level=0.95):
            pass

    shares_parameters({"level": 0.95}, without=("level",))(lambda: None)


def test_the_estimators_take_the_one_shared_definition():
    shared = estimate._FIT_PARAMETERS
    for fn in (
        estimate.fit,
        estimate.visit_counts,
        estimate.range_counts,
        estimate.od_flows,
        estimate.denoise,
    ):
        params = inspect.signature(fn).parameters
        taken = {n: params[n].default for n in shared if n in params}
        assert taken == {n: v for n, v in shared.items() if n in taken}, fn.__name__
        assert "{" + "fit}" not in fn.__doc__  # every template filled
    # the block of shared parameters is written once and appears in every docstring that takes them
    for fn in (estimate.fit, estimate.visit_counts, estimate.range_counts, estimate.od_flows):
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
    # the method spells its parameters out (help, introspection); they are the function's, both ways
    from geoldp import metrics

    def keyword_defaults(fn):
        params = inspect.signature(fn).parameters.values()
        return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}

    method = accessor.LDPAccessor.evaluate
    assert keyword_defaults(method)  # a non-empty definition: the check below has something to compare
    shares_parameters(keyword_defaults(metrics.evaluate))(method)
    shares_parameters(keyword_defaults(method))(metrics.evaluate)
    assert (
        list(inspect.signature(method).parameters)[1]
        == list(inspect.signature(metrics.evaluate).parameters)[1]
    )
