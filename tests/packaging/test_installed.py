"""The wheel and the sdist are the product: what `pip install` puts on a machine must run.

The quick tests check that every folder of the package is one setuptools finds; the slow ones build
both distributions once, install each in turn into a fresh virtual environment that cannot see this
checkout, and run the example and `kb-eval init` from there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from setuptools import find_packages

from tests.conftest import REPO

PACKAGE = REPO / "scanner"


def source_folders() -> set[str]:
    """Every folder under scanner/ that holds Python code, as a dotted package name."""
    return {
        ".".join(path.parent.relative_to(REPO).parts)
        for path in PACKAGE.rglob("*.py")
        if "__pycache__" not in path.parts
    }


def test_every_folder_with_code_is_a_package_setuptools_finds() -> None:
    folders = source_folders()
    assert "scanner.render" in folders  # guards against an empty walk
    # A folder without __init__.py is a namespace package: find_packages skips it, and so would the wheel.
    found = set(find_packages(where=str(REPO), include=["scanner", "scanner.*"]))
    assert folders - found == set(), "folders the wheel would leave out (add an __init__.py)"


def test_a_folder_without_init_is_reported_as_missing(tmp_path: Path) -> None:
    # The near miss of the test above: the check must see a folder that lacks its __init__.py.
    (tmp_path / "scanner" / "inner").mkdir(parents=True)
    (tmp_path / "scanner" / "__init__.py").write_text("")
    (tmp_path / "scanner" / "inner" / "code.py").write_text("")
    found = set(find_packages(where=str(tmp_path), include=["scanner", "scanner.*"]))
    assert found == {"scanner"}


@pytest.fixture(scope="module")
def distributions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, and the wheel built from it, as a release builds them (`python -m build`): once for
    every test here (each build sets up an isolated environment), and the wheel's being made from
    the sdist shows the sdist holds everything the wheel needs."""
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        capture_output=True, text=True, timeout=900, check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [wheel], [sdist] = out.glob("*.whl"), out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def pip(bin_dir: Path, *argv: str) -> None:
    done = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", *argv, "--quiet", "--disable-pip-version-check"],
        capture_output=True, text=True, timeout=900, check=False, cwd=bin_dir.parent,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def environment(distributions: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment, outside this checkout, with the wheel and its dependencies
    installed (once: the dependencies are most of an install's time); returns its bin/."""
    root = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=True, clear=True).create(root)
    # No bytecode compiled at install: half the install's time; the runs compile what they import.
    pip(root / "bin", "install", "--no-compile", str(distributions["wheel"]))
    return root / "bin"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_the_installed_distribution_runs_the_example_and_init(
    kind: str, distributions: dict[str, Path], environment: Path, tmp_path: Path
) -> None:
    bin_dir = environment
    # Each distribution in its turn replaces kb-eval in the environment; `pip check` then shows
    # that the dependencies it declares are the ones installed.
    pip(bin_dir, "install", "--no-compile", "--no-deps", "--force-reinstall", str(distributions[kind]))
    pip(bin_dir, "check")
    [record] = bin_dir.parent.glob("lib/python*/site-packages/kb_eval-*.dist-info/direct_url.json")
    assert distributions[kind].name in record.read_text(encoding="utf-8")  # this one, not the other, is installed
    work = tmp_path / "work"
    shutil.copytree(REPO / "examples" / "kb", work / "kb")
    # No PYTHONPATH and a working folder outside the checkout: only the installed copy can be imported.
    env = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import scanner; print(scanner.__file__)"],
        capture_output=True, text=True, cwd=work, env=env, timeout=60, check=True,
    )
    assert str(bin_dir.parent) in where.stdout, where.stdout

    example = subprocess.run(
        [str(bin_dir / "kb-eval"), "--kb-path", "kb", "--no-history", "--format", "json"],
        capture_output=True, text=True, cwd=work, env=env, timeout=300, check=False,
    )
    assert example.returncode == 0, example.stderr
    assert '"query_count": 8' in example.stdout

    fresh_kb = work / "fresh"
    (fresh_kb / "notes").mkdir(parents=True)
    (fresh_kb / "notes" / "a.md").write_text("# Alpha\nRollback procedures for the release.\n", encoding="utf-8")
    init = subprocess.run(
        [str(bin_dir / "kb-eval"), "init", "--kb-path", str(fresh_kb)],
        capture_output=True, text=True, cwd=work, env=env, timeout=300, check=False,
    )
    assert init.returncode == 0, init.stderr
    assert (fresh_kb / ".kb-eval.yml").is_file()


@pytest.mark.slow
def test_the_wheel_holds_every_package_and_the_schema(distributions: dict[str, Path]) -> None:
    with zipfile.ZipFile(distributions["wheel"]) as archive:
        names = set(archive.namelist())
        packaged = archive.read("scanner/_schema/report.schema.json")
    assert packaged == (REPO / "schema" / "report.schema.json").read_bytes()
    for folder in source_folders():
        assert folder.replace(".", "/") + "/__init__.py" in names, folder


def test_the_schema_package_is_the_published_schema_folder() -> None:
    # The quick half of the wheel test: the folder setup.py ships as scanner._schema is the one
    # a checkout reads, so the installed copy validates against the published schema.
    import runpy

    from scanner.report import document as json_report

    declared = runpy.run_path(str(REPO / "setup.py"), run_name="setup_declarations")
    folder = REPO / declared["PACKAGE_DIR"][declared["SCHEMA_PACKAGE"]]
    assert json_report.SCHEMA_PATH == folder / json_report.SCHEMA_FILE
    assert declared["SCHEMA_PACKAGE"] in declared["PACKAGES"]
