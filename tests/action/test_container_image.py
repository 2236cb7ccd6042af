"""The action's image: it builds, holds only the action, and runs under the runner's layout.

The end-to-end test of entrypoint.py in Action mode comes with that mode; this
is the smoke test of the image and of tests/support/container.py itself.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.container

from tests.support.container import (
    BuiltImage,
    RunnerLayout,
    action_inputs,
    build_image,
    pull_request_event,
    run_action,
)
from tests.support.runner_log import parse_env_file, parse_log

PYTHON = "/opt/venv/bin/python"


@pytest.fixture(scope="session")
def image() -> Iterator[BuiltImage]:
    built = build_image()
    print(f"\nimage {built.tag}: {built.size_bytes / 1e6:.0f} MB, built in {built.build_seconds:.1f} s")
    yield built


def test_image_has_the_runtime_dependencies_on_debian_python_311(image: BuiltImage, tmp_path: Path) -> None:
    run = run_action(
        image.tag,
        RunnerLayout(tmp_path),
        action_inputs(),
        entrypoint=PYTHON,
        args=[
            "-c",
            "import yaml, jsonschema, requests, ahocorasick, ahocorasick_rs, sys; print(sys.version_info[:2])",
        ],
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "(3, 11)"


def test_image_holds_only_the_action_code_compiled_from_exactly_its_sources(image: BuiltImage, tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import importlib.util, os, pathlib
        print(" ".join(sorted(os.listdir("/app"))))
        sources = sorted(pathlib.Path("/app/scanner").rglob("*.py"))
        compiled = sorted(pathlib.Path("/app").rglob("*.pyc"))
        fresh = [pathlib.Path(importlib.util.cache_from_source(str(s))) for s in sources]
        print(len(sources), len(compiled), compiled == sorted(fresh))
        print(all(os.path.getmtime(c) >= os.path.getmtime(s) for s, c in zip(sources, fresh)))
    """)
    run = run_action(image.tag, RunnerLayout(tmp_path), action_inputs(), entrypoint=PYTHON, args=["-c", script])
    assert run.returncode == 0, run.stderr
    listing, counts, fresh = run.stdout.splitlines()
    assert listing.split() == ["entrypoint.py", "scanner", "schema"]
    sources, compiled, one_each = counts.split()
    # Every module compiled at build time, and no bytecode without its source (none from the context).
    assert int(sources) > 20 and compiled == sources and one_each == "True" and fresh == "True"


def test_the_runtime_has_no_pip_ensurepip_compiler_or_apt_lists(image: BuiltImage, tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import importlib.util, os, shutil
        print([m for m in ("pip", "setuptools", "ensurepip", "yaml", "ahocorasick", "ahocorasick_rs") if importlib.util.find_spec(m)])
        print([t for t in ("gcc", "cc", "pip", "pip3", "python3.11") if shutil.which(t)])
        print(os.listdir("/var/lib/apt/lists"), os.path.exists("/usr/share/doc/libpython3.11-stdlib/changelog.Debian.gz"))
    """)
    run = run_action(image.tag, RunnerLayout(tmp_path), action_inputs(), entrypoint=PYTHON, args=["-c", script])
    assert run.returncode == 0, run.stderr
    modules, tools, leftovers = run.stdout.splitlines()
    # What the action imports is there; what only building needed is not.
    assert modules == "['yaml', 'ahocorasick', 'ahocorasick_rs']"
    assert tools == "['python3.11']"
    assert leftovers == "[] False"


def test_the_standard_library_is_compiled_at_build_time(image: BuiltImage, tmp_path: Path) -> None:
    # Without the `python3` package nothing compiles it at install; a step would then compile
    # every standard module it imports, on every run.
    script = (
        "import importlib.util, json, os, sqlite3, argparse;"
        "print(all(os.path.exists(importlib.util.cache_from_source(m.__file__)) for m in (json, os, sqlite3, argparse)))"
    )
    run = run_action(image.tag, RunnerLayout(tmp_path), action_inputs(), entrypoint=PYTHON, args=["-c", script])
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True"


def test_image_is_small(image: BuiltImage) -> None:
    # Measured 179 MB on the debootstrap stand-in base (122 MB), 189 MB before the image kept only
    # the interpreter and its standard library (ADR 0008); 339 MB with numpy (the search) and
    # git with its perl; 264 MB once dulwich read the base revision instead of git; 304 MB with the
    # MCP SDK the MCP retriever speaks through (cryptography, pydantic, httpx and mcp: docs/dependencies.md).
    # A jump is a bug.
    assert image.size_bytes < 310_000_000


def test_the_container_sees_the_runner_layout_and_its_file_commands_reach_the_host(
    image: BuiltImage, tmp_path: Path
) -> None:
    layout = RunnerLayout(tmp_path)
    layout.write_event(pull_request_event(number=42))
    (layout.workspace / "kb").mkdir()
    script = textwrap.dedent("""
        import json, os, sys
        sys.path.insert(0, "/app")
        from scanner.github.workflow import append_output, append_summary, format_command, AnnotationProperties
        assert os.getcwd() == "/github/workspace", os.getcwd()
        assert os.path.isdir("kb")
        event = json.load(open(os.environ["GITHUB_EVENT_PATH"]))
        append_output(os.environ["GITHUB_OUTPUT"], "kb-path", os.environ["INPUT_KB-PATH"])
        append_output(os.environ["GITHUB_OUTPUT"], "pr", str(event["number"]))
        append_output(os.environ["GITHUB_OUTPUT"], "flags", os.environ["GITHUB_ACTIONS"] + os.environ["CI"])
        append_summary(os.environ["GITHUB_STEP_SUMMARY"], "# hello\\n")
        print(format_command("warning", AnnotationProperties(file="kb/a.md", line=3), "from the container"))
    """)
    inputs = action_inputs({"kb-path": "kb"})
    run = run_action(image.tag, layout, inputs, entrypoint=PYTHON, args=["-c", script])
    assert run.returncode == 0, run.stderr
    assert parse_env_file(run.outputs_text) == [
        ("kb-path", "kb"),
        ("pr", "42"),
        ("flags", "truetrue"),
    ]
    assert run.summary_text == "# hello\n"
    warnings = parse_log(run.stdout).annotations("warning")
    assert [(w.properties["file"], w.properties["line"], w.data) for w in warnings] == [
        ("kb/a.md", "3", "from the container")
    ]


def test_every_declared_input_reaches_the_container_with_its_default(image: BuiltImage, tmp_path: Path) -> None:
    inputs = action_inputs()
    script = "import os, json; print(json.dumps({k: v for k, v in os.environ.items() if k.startswith('INPUT_')}))"
    run = run_action(
        image.tag,
        RunnerLayout(tmp_path),
        inputs,
        entrypoint=PYTHON,
        args=["-c", script],
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["INPUT_FAIL-ON-REGRESSION"] == "false"
    assert seen["INPUT_GOLDEN"] == ""
    assert seen["INPUT_K"] == "1,5,10"
    assert len(seen) == len(inputs)
