"""The allocator's setting (keep_freed_memory) is the program's: the console script and
entrypoint.py make it as they start; `main`, which tests and benches call in process, leaves the
calling process's heap as it found it (a setting left behind changed what later tests measured)."""

from __future__ import annotations

import importlib
import io
import runpy
import shutil
import sys
from pathlib import Path

import pytest

from scanner.foundation import workers
from tests.conftest import REPO

cli_main = importlib.import_module("scanner.cli.main")  # the module: scanner.cli's `main` is the function


@pytest.fixture
def settings_made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []
    monkeypatch.setattr(cli_main, "keep_freed_memory", lambda: made.append("cli") or True)
    monkeypatch.setattr(workers, "keep_freed_memory", lambda: made.append("entrypoint") or True)
    return made


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    shutil.copytree(REPO / "examples" / "kb", tmp_path / "kb")
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    return ["--kb-path", str(tmp_path / "kb"), "--no-history", "--format", "json"]


def test_main_called_in_process_leaves_the_allocator_alone(settings_made: list[str], example: list[str]) -> None:
    assert cli_main.main(example, stdout=io.StringIO(), stderr=io.StringIO()) == 0
    assert settings_made == []


def test_the_console_script_sets_the_allocator_before_it_runs(
    settings_made: list[str], example: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["kb-eval", *example])
    with pytest.raises(SystemExit) as exited:
        cli_main.run()
    assert exited.value.code == 0 and settings_made == ["cli"]
    assert '"query_count": 8' in capsys.readouterr().out


def test_the_images_entry_point_sets_the_allocator_before_it_runs(
    settings_made: list[str], example: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["entrypoint.py", *example])
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(str(REPO / "entrypoint.py"), run_name="__main__")
    assert exited.value.code == 0 and settings_made == ["entrypoint"]
    assert '"query_count": 8' in capsys.readouterr().out
