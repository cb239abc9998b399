"""The tutorial (docs/tutorial.md, examples/tutorial.py) runs end to end on raw GPS data built here.

The docs page shows the script's code through MyST ``literalinclude`` blocks between ``# [name]`` /
``# [/name]`` markers, so the code users read is the code these tests run; ``test_docs_include_the_script``
keeps the page and the script in step, and the console commands of the page are run as written.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io as io_text
import re
import shlex
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import geoldp
from geoldp import cli, io, prepare

pyogrio = pytest.importorskip("pyogrio")

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "tutorial.py"
DOC = ROOT / "docs" / "tutorial.md"
# more trips per user than the budget allows: the tutorial releases MAX_PER_USER of each user's trips
N_USERS, TRIPS_PER_USER = 25, 3


def _load_tutorial():
    spec = importlib.util.spec_from_file_location("geoldp_tutorial_example", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses/pickling look modules up here
    spec.loader.exec_module(module)
    return module


tutorial = _load_tutorial()


def _raw_fixes(seed: int = 42) -> pd.DataFrame:
    """Noisy 5-second GPS fixes: 25 users x 3 trips of 200-300 fixes, three hours apart, inside the area.

    Every trip runs between two random places of an inner box well inside the tutorial's public area, so
    no trip leaves it; the fixes have ~5 m of GPS noise and a stop of 20 identical fixes in the middle.
    """
    gen = np.random.default_rng(seed)
    minx, miny, maxx, maxy = tutorial.AREA
    inner = (minx + 0.06, miny + 0.06, maxx - 0.06, maxy - 0.06)
    frames = []
    for user in range(N_USERS):
        start = pd.Timestamp("2026-05-04 07:00") + pd.Timedelta(minutes=int(gen.integers(0, 120)))
        for trip in range(TRIPS_PER_USER):
            n = int(gen.integers(200, 301))
            a = gen.uniform(inner[:2], inner[2:])
            b = gen.uniform(inner[:2], inner[2:])
            s = np.linspace(0.0, 1.0, n)[:, None]
            xy = a + s * (b - a) + gen.normal(0.0, 5e-5, (n, 2))
            xy[n // 2 : n // 2 + 20] = xy[n // 2]  # a stop: the logger repeats one fix
            t0 = start + pd.Timedelta(hours=3 * trip)
            frames.append(
                pd.DataFrame(
                    {
                        "user_id": f"u{user:03d}",
                        "time": t0 + pd.to_timedelta(np.arange(n) * 5, unit="s"),
                        "lon": xy[:, 0],
                        "lat": xy[:, 1],
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def fixes_df() -> pd.DataFrame:
    return _raw_fixes()


def _check_release(gpkg: Path) -> None:
    layers = {str(name): str(kind) for name, kind in pyogrio.list_layers(gpkg)}
    assert layers == {"public_points": "Point", "released_trips": "LineString"}
    info = pyogrio.read_info(gpkg, layer="released_trips")
    assert info["crs"] == "EPSG:4326"
    assert info["geometry_type"] == "LineString"
    assert info["features"] == N_USERS * tutorial.MAX_PER_USER
    assert "user_id" not in list(info["fields"])  # the user column pays, it is not released
    released = pyogrio.read_dataframe(gpkg, layer="released_trips")
    public = pyogrio.read_dataframe(gpkg, layer="public_points")
    assert len(public) == pyogrio.read_info(gpkg, layer="public_points")["features"] > 100
    # every released vertex is a public point
    rel = np.round(np.asarray(released.get_coordinates()), 9)
    pub = {tuple(p) for p in np.round(np.asarray(public.get_coordinates()), 9)}
    assert all(tuple(p) in pub for p in rel)
    ledger = io.read_ledger(gpkg)  # the sidecar, checked against the GeoPackage's size and SHA-256
    assert ledger is not None
    assert ledger.mechanism == "atp"
    assert ledger.epsilon == tutorial.EPSILON
    assert "grid(" in str(ledger.points)


@pytest.fixture(scope="module")
def tutorial_run(tmp_path_factory, fixes_df):
    """One run of the tutorial (compressed fixes; the CLI commands below read the plain CSV), shared by
    the tests that check what it wrote, printed and charged: (folder, its GeoPackage, what it printed)."""
    root = tmp_path_factory.mktemp("tutorial")
    private = root / "private"
    private.mkdir()
    fixes = private / "fixes.csv.gz"
    fixes_df.to_csv(fixes, index=False)  # pandas compresses by the .gz suffix
    printed = io_text.StringIO()
    with contextlib.redirect_stdout(printed):
        gpkg = tutorial.main(fixes, root / "release", rng=1)
    return root, gpkg, printed.getvalue()


# The two tests that run the whole tutorial (about 20 s: a pilot, a plan, a release and its estimates) are
# slow-tier tests, run by CI's bounded slow step; the script's command line and the page's includes stay here.
@pytest.mark.slow
def test_tutorial_end_to_end(tutorial_run):
    root, gpkg, printed = tutorial_run
    private, out = root / "private", root / "release"
    assert gpkg == out / "released.gpkg"
    assert sorted(p.name for p in out.iterdir()) == [
        "estimates.gpkg",
        "released.gpkg",
        "released.gpkg.ledger.json",
    ]
    estimates = [str(n) for n in pyogrio.list_layers(out / "estimates.gpkg")[:, 0]]
    assert estimates == ["zone_visits", "od_flows", "hotspots"]
    assert sorted(p.name for p in private.iterdir()) == sorted(["budget.json", "fixes.csv.gz", "trips.gpkg"])
    _check_release(gpkg)
    # every user spent two of her three trips at ε = 4; every fifth user also the pilot's ε = 1, all of the
    # total; the file is with the private data
    acc = geoldp.BudgetAccountant.load(private / "budget.json")
    assert len(acc) == N_USERS
    for u in range(N_USERS):
        assert acc.remaining(f"u{u:03d}") == (0.0 if u % 5 == 0 else tutorial.PILOT_EPSILON), u
    assert f"{N_USERS * TRIPS_PER_USER} trips" in printed
    assert f"released {N_USERS * tutorial.MAX_PER_USER} of {N_USERS * TRIPS_PER_USER} trips" in printed
    assert "uniform" in printed and "constant" in printed
    # running again spends a second budget nobody has: refused before any draw, the release unchanged
    before = gpkg.read_bytes()
    with pytest.raises(geoldp.BudgetError):
        tutorial.main(private / "fixes.csv.gz", out, rng=2)
    assert gpkg.read_bytes() == before


def test_the_script_command_line_and_its_demo_data(tmp_path):
    """What ``python examples/tutorial.py`` adds to ``main``: its options, and the simulated log it uses
    without ``--fixes`` (the rest is ``main``, run end to end above)."""
    import subprocess

    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0 and "--fixes" in proc.stdout and "--epsilon" in proc.stdout
    tutorial._demo_fixes(tmp_path / "fixes.csv", n_users=2)
    log = pd.read_csv(tmp_path / "fixes.csv", parse_dates=["time"])
    assert list(log.columns) == ["user_id", "time", "lon", "lat"]
    assert sorted(log["user_id"].unique()) == ["u000", "u001"]
    assert log.groupby("user_id")["time"].is_monotonic_increasing.all()  # one log per user, in time order


def test_area_from_the_data_is_flagged(fixes_df, tmp_path):
    """The guard the tutorial mentions: a grid over the data's own bounds gives a PrivacyWarning."""
    fixes_df.head(600).to_csv(tmp_path / "f.csv", index=False)
    fixes = io.read_trajectories(tmp_path / "f.csv", traj_id_col="user_id", time_col="time")
    trips = prepare.trajectories_from_points(fixes, "user_id", "time", max_gap="10min")
    trips = prepare.resample(trips, max_points=10)
    private_grid = geoldp.points.grid(tuple(trips.total_bounds), 500)
    with pytest.warns(geoldp.PrivacyWarning, match="bounds of the trajectories"):
        trips.ldp.perturb(private_grid, epsilon=4.0, rng=0)


def _includes(doc: str) -> list[tuple[str, str, str]]:
    """(file, start-after, end-before) of every literalinclude block of the page."""
    found = []
    for block in re.findall(r"```\{literalinclude\}(.*?)```", doc, flags=re.S):
        lines = block.strip().splitlines()
        opts = {
            k: v.strip().strip('"')  # quoted, since a bare "#" would start a YAML comment
            for k, v in re.findall(r"^:([\w-]+):\s*(.*)$", "\n".join(lines[1:]), flags=re.M)
        }
        found.append((lines[0].strip(), opts.get("start-after", ""), opts.get("end-before", "")))
    return found


def test_docs_include_the_script():
    doc = DOC.read_text(encoding="utf-8")
    script = SCRIPT.read_text(encoding="utf-8")
    markers = re.findall(r"^\s*# \[([\w-]+)\]$", script, flags=re.M)
    assert markers, "examples/tutorial.py has no # [name] markers"
    for name in markers:
        assert len(re.findall(rf"^\s*# \[/{name}\]$", script, flags=re.M)) == 1, name
    includes = _includes(doc)
    assert all(f == "../examples/tutorial.py" for f, _, _ in includes)
    shown = [start for _, start, _ in includes]
    # every marked step is shown once, in the script's order, with its own end marker
    assert shown == [f"# [{m}]" for m in markers]
    assert [end for _, _, end in includes] == [f"# [/{m}]" for m in markers]
    # no hand-copied Python in the page: its code comes from the script
    assert "```python" not in doc
    assert "TODO" not in doc and "geoldp.estimate" in doc


def _console_commands(doc: str) -> list[list[str]]:
    commands = []
    for block in re.findall(r"```console\n(.*?)```", doc, flags=re.S):
        text = block.replace("\\\n", " ")
        commands += [shlex.split(line[2:]) for line in text.splitlines() if line.startswith("$ geoldp ")]
    return commands


@pytest.mark.slow
def test_docs_cli_commands_run(tmp_path, tutorial_run, fixes_df, monkeypatch, capsys):
    """Every ``$ geoldp ...`` command of the page runs as written, after the script, in its folder."""
    commands = _console_commands(DOC.read_text(encoding="utf-8"))
    assert commands, "docs/tutorial.md shows no geoldp command"
    # the script's folder as it left it (private/trips.gpkg is the CLI's input), copied: the shared run
    # stays as it was for the other tests
    shutil.copytree(tutorial_run[0], tmp_path / "run")
    monkeypatch.chdir(tmp_path / "run")
    fixes_df.to_csv("private/fixes.csv", index=False)
    assert [argv[1] for argv in commands] == ["prepare", "points", "perturb", "estimate"]
    for argv in commands:
        assert argv[0] == "geoldp"
        assert cli.main(argv[1:]) == 0, capsys.readouterr().err
        out = Path(argv[argv.index("-o") + 1])
        if argv[1] == "estimate":
            assert [str(n) for n in pyogrio.list_layers(out)[:, 0]] == ["zone_visits", "od_flows", "hotspots"]
            continue
        info = pyogrio.read_info(out)
        assert info["crs"] == "EPSG:4326"
        if argv[1] == "prepare":  # the trips inside the area, all of them (private)
            assert info["features"] == N_USERS * TRIPS_PER_USER
        if argv[1] == "perturb":
            assert info["geometry_type"] == "LineString"
            assert info["features"] == N_USERS * tutorial.MAX_PER_USER
            ledger = io.read_ledger(out)
            assert ledger.mechanism == "atp" and ledger.epsilon == tutorial.EPSILON
            assert ledger.user_budget["max_per_user"] == tutorial.MAX_PER_USER
