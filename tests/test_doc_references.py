"""Every "§" reference in the code, tests and docs points to a section of docs/algorithm.md.

The rule deciding which document a reference points to:

1. A *document name* is ``ALGORITHM``, ``ALGORITHM.md``, ``[path/]algorithm.md`` or ``spec`` (all meaning
   docs/algorithm.md), or the name of another document: ``TESTING``, ``STYLE``, ``LANDSCAPE``, ``README``
   (with or without ``.md``), any other ``name.md``, or ``RFC <number>``.
2. A reference belongs to the **nearest document name before it on the same line**. A reference that is the
   first thing on its line (after indentation and comment markers) continues a document name that ends the
   previous line (``RFC 7946`` at a line end, ``§6.1`` at the start of the next one).
3. A reference with no document name before it on its line is a reference to docs/algorithm.md.

References that belong to another document are ignored. Every reference to docs/algorithm.md, including
both ends of a range such as ``§8.2–8.6`` or ``§13.3–13.4``, must match a numbered heading of
docs/algorithm.md (``## 8. ATP …`` gives ``8``, ``### 8.4 Calibration centre η`` gives ``8.4``).

Scanned: ``*.py`` and ``*.md`` under geoldp/, tests/, benchmarks/, experiments/, and docs/*.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALGORITHM_DOC = ROOT / "docs" / "algorithm.md"

_NUM = r"\d+(?:\.\d+)*"
#: "§8.4", "§ 8.4", "§8.2–8.6", "§13.3-13.4", "§1–§2" (the second § is a reference of its own).
_REF = re.compile(rf"§\s?(?P<start>{_NUM})(?:[–-](?P<end>{_NUM})\b)?")
#: Document names; group "own" marks names of docs/algorithm.md itself.
_DOC = re.compile(
    r"(?P<own>\bALGORITHM(?:\.md)?\b|\b(?:[\w.-]+/)*algorithm\.md\b|\bspec\b)"
    r"|\b(?:TESTING|STYLE|LANDSCAPE|README)\b"
    r"|\bRFC\s?\d+"
    r"|\b[\w./-]+\.md\b"
)
_HEADING = re.compile(rf"^#{{1,6}}\s+(?P<num>{_NUM})\.?\s")
_LINE_START = re.compile(r"^\s*(?:#+|//|\*|-|>)?\s*§")


def _sources() -> list[Path]:
    files: list[Path] = []
    for top in ("src/geoldp", "tests", "benchmarks", "experiments"):
        base = ROOT / top
        if base.is_dir():
            files += sorted(p for p in base.rglob("*") if p.suffix in (".py", ".md") and p.is_file())
    files += sorted((ROOT / "docs").glob("*.md"))
    return files


def _owner(name: re.Match) -> bool:
    """True if a document-name match names docs/algorithm.md."""
    return name.group("own") is not None


def algorithm_references(text: str) -> list[tuple[int, str]]:
    """(line number, section number) of every reference to docs/algorithm.md in ``text`` (see module doc)."""
    out: list[tuple[int, str]] = []
    previous_ends_with: re.Match | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        names = list(_DOC.finditer(line))
        for ref in _REF.finditer(line):
            before = [m for m in names if m.end() <= ref.start()]
            if before:
                own = _owner(before[-1])
            elif previous_ends_with is not None and _LINE_START.match(line[: ref.start() + 1]):
                own = _owner(previous_ends_with)
            else:
                own = True
            if own:
                out.append((lineno, ref.group("start")))
                if ref.group("end"):
                    out.append((lineno, ref.group("end")))
        last = names[-1] if names else None
        previous_ends_with = last if last is not None and not line[last.end() :].strip(" `*)") else None
    return out


def algorithm_headings(text: str) -> list[str]:
    """Section numbers of the numbered headings of ``text``, in order (fenced code blocks skipped)."""
    numbers: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~", ":::")):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m:
            numbers.append(m.group("num"))
    return numbers


def algorithm_sections(text: str) -> set[str]:
    """The set of section numbers of ``text`` (see :func:`algorithm_headings`)."""
    return set(algorithm_headings(text))


def test_rule_on_examples():
    """The attribution rule on the shapes that occur in the tree (so a regex slip cannot pass silently)."""
    text = (
        "a (ALGORITHM §8.2–8.6) b §5.5 c\n"
        "(TESTING §1–§2) and STYLE §3, §5; TESTING.md §8–9\n"
        "x (ALGORITHM §4; TESTING R1–R3) RFC 8439 §2.3.2\n"
        "allowed by RFC 7946\n"
        "  §6.1 and ignored\n"
        "see ALGORITHM.md §13.3–13.4 and the spec §9.4\n"
    )
    assert algorithm_references(text) == [
        (1, "8.2"),
        (1, "8.6"),
        (1, "5.5"),
        (3, "4"),
        (6, "13.3"),
        (6, "13.4"),
        (6, "9.4"),
    ]
    assert algorithm_sections("## 8. ATP\n### 8.4 Centre η\n```\n## 99. not a heading\n```\n") == {"8", "8.4"}


def test_every_reference_has_a_section():
    if not ALGORITHM_DOC.is_file():
        pytest.fail("docs/algorithm.md is missing: the code's § references point into it.")
    sections = algorithm_sections(ALGORITHM_DOC.read_text(encoding="utf-8"))
    missing = []
    n_refs = 0
    for path in _sources():
        refs = algorithm_references(path.read_text(encoding="utf-8"))
        n_refs += len(refs)
        missing += [f"{path.relative_to(ROOT)}:{line}: §{num}" for line, num in refs if num not in sections]
    assert n_refs > 0, "no § references found: the scan is broken"
    assert not missing, "references without a section in docs/algorithm.md:\n" + "\n".join(missing)


def test_section_numbers_are_unique():
    """A number used twice would make a reference ambiguous."""
    numbers = algorithm_headings(ALGORITHM_DOC.read_text(encoding="utf-8"))
    duplicates = sorted({n for n in numbers if numbers.count(n) > 1})
    assert numbers, "docs/algorithm.md has no numbered headings"
    assert not duplicates, f"section numbers used twice in docs/algorithm.md: {duplicates}"
