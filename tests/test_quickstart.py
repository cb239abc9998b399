"""docs/quickstart.md runs as written: its Python blocks in order, then its command lines, on the sample
file the page itself makes. Blocks marked ``<!-- quickstart-test: slow -->`` (the planner) run in the slow
tier only, with the whole page; the default tier checks that every command line parses and that the sample
file looks as the page shows."""

from __future__ import annotations

import re
import shlex
import shutil
import warnings
from pathlib import Path

import pytest

from geoldp import cli

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "quickstart.md"
FENCE = re.compile(r"(<!-- quickstart-test: slow -->\n)?```(python|bash)\n(.*?)```", re.S)


def _blocks(kind: str, *, slow: bool) -> list[str]:
    return [
        code
        for mark, lang, code in FENCE.findall(DOC.read_text(encoding="utf-8"))
        if lang == kind and (slow or not mark)
    ]


def _commands(*, slow: bool) -> list[list[str]]:
    lines = []
    for block in _blocks("bash", slow=slow):
        for command in block.replace("\\\n", " ").splitlines():
            if command.strip():
                argv = shlex.split(command)
                assert argv[0] == "geoldp", command
                lines.append(argv[1:])
    return lines


def test_the_page_has_every_step():
    assert len(_blocks("python", slow=True)) >= 6 and len(_commands(slow=True)) >= 6
    names = [argv[0] for argv in _commands(slow=True)]
    assert names == ["prepare", "points", "perturb", "estimate", "plan", "collect"]


@pytest.mark.parametrize("argv", _commands(slow=True), ids=lambda a: a[0])
def test_every_command_line_parses(argv):
    parser = cli.build_parser()
    args = parser.parse_args(cli.join_negative_boxes(argv))  # a usage error would exit here
    assert args.command == argv[0]


def test_the_sample_file_is_as_shown(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(_blocks("python", slow=False)[0], {})
    shown = re.search(r"```text\n(device,time,lon,lat\n.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    head = (tmp_path / "fixes.csv").read_text().splitlines()[:3]
    assert shown is not None and head == shown.group(1).splitlines()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")  # the page's own warnings (few trips for some designs)
def test_the_quickstart_runs_as_written(tmp_path, monkeypatch, capsys):
    py_dir, cli_dir = tmp_path / "python", tmp_path / "cli"
    py_dir.mkdir()
    cli_dir.mkdir()
    monkeypatch.chdir(py_dir)
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for block in _blocks("python", slow=True):
            exec(block, namespace)
    assert (py_dir / "estimates.gpkg").is_file() and (py_dir / "zone_visits.html").is_file()
    layer = namespace["layers"]["zone_visits"]
    assert {"estimate", "lower", "upper", "supported"} <= set(layer.columns)
    assert (layer["lower"] <= layer["estimate"]).all() and (layer["estimate"] <= layer["upper"]).all()
    assert len(namespace["released"]) == namespace["trips"]["device"].nunique()  # one trip per device

    shutil.copy(py_dir / "fixes.csv", cli_dir / "fixes.csv")
    monkeypatch.chdir(cli_dir)
    for argv in _commands(slow=True):
        code = cli.main(argv)
        err = capsys.readouterr().err
        assert code == 0, (argv, err)
    for name in ("trips.gpkg", "points.gpkg", "release.gpkg", "estimates.gpkg", "answer.gpkg"):
        assert (cli_dir / name).is_file(), name
