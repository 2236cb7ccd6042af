"""Every value the settings accept runs.

Each setting is given the values an attacker or a typo would: numbers past what C types hold,
thousands of digits, NaN, paths at and past PATH_MAX, lone surrogates, NUL. Each is either
refused by its parser (exit 2 naming the setting) or accepted, and then the run must not crash.
The retrievers' answers, the other input a run decodes, are refused (exit 2 naming the source)
when they hold text that is not text (a lone surrogate written as a JSON escape).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from scanner.action.inputs import workspace_path
from scanner.foundation.errors import ExitCode, InputError
from scanner.settings.declaration import (
    MAX_CAP_SETTING,
    MAX_CONCURRENCY,
    MAX_HTTP_RETRIES,
    MAX_TIMEOUT_S,
    SETTINGS,
    Form,
    Setting,
)
from scanner.settings.values import NAME_MAX_BYTES, PATH_MAX_BYTES, Refused
from tests.conftest import write_tree
from tests.hostile.support import ANSWER, GOLDEN, refused, run, run_json
from tests.support.loopback_server import Reply, running

EXTREMES = [
    "0", "-1", "1", "9223372037", "9223372036854775808", "1e300", "-1e300", "1e-320", "inf", "nan", "1" * 5000,
    "1.5", "", " ", "\x00", "\ud800", "a" * (PATH_MAX_BYTES + 1), "/".join(["d" * NAME_MAX_BYTES] * 20),
    "d" * (NAME_MAX_BYTES + 1), "2,2,1", "1,5,10", "GET",
]


CAPS = ("max-files", "max-mib", "max-sections", "max-postings", "max-terms")


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.form is not Form.SWITCH], ids=lambda s: s.name)
def test_every_setting_refuses_or_accepts_every_extreme_value_without_another_exception(setting: object) -> None:
    for text in EXTREMES:
        try:
            value = setting.parse(text)  # type: ignore[attr-defined]
        except Refused:
            continue
        # Accepted: a number must be one the run can hold.
        if isinstance(value, float):
            assert value == value and abs(value) <= MAX_TIMEOUT_S, (setting, text)  # noqa: PLR0124 - NaN
        if isinstance(value, int) and not isinstance(value, bool):
            # The corpus caps count files, MiB and sections: a cap is only compared with, never
            # allocated, so its bound is the declared one; every other number sizes work.
            bound = MAX_CAP_SETTING if setting.name in CAPS else 10_000  # type: ignore[attr-defined]
            assert abs(value) <= bound, (setting, text)
        if isinstance(value, Path):
            encoded = os.fsencode(os.path.abspath(value))
            assert len(encoded) < PATH_MAX_BYTES and max(map(len, encoded.split(b"/"))) <= NAME_MAX_BYTES


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--http-timeout", "9223372037"), ("--http-timeout", "1e300"), ("--command-timeout", "9223372037"),
     ("--http-retries", "9" * 30), ("--concurrency", "1000000000"), ("--history-size", "9223372036854775808")],
)
def test_numbers_past_their_bound_are_refused_naming_the_flag(tmp_path: Path, flag: str, value: str) -> None:
    kb = write_tree(tmp_path / "kb", {"a.md": ANSWER, ".kb-eval.yml": GOLDEN})
    assert flag in refused(kb, flag, value, "--no-history")


def test_numbers_at_their_bound_run(tmp_path: Path) -> None:
    # The near miss: the largest accepted values are used without overflow.
    kb = write_tree(tmp_path / "kb", {"a.md": ANSWER, ".kb-eval.yml": GOLDEN})
    answer = json.dumps({"results": [{"path": "a.md", "score": 1}]})
    with running(lambda request: Reply(body=json.loads(answer))) as server:
        run_json(kb, "--http-url", server.url, "--http-timeout", f"{MAX_TIMEOUT_S:g}", "--http-retries",
                 str(MAX_HTTP_RETRIES), "--concurrency", str(MAX_CONCURRENCY), "--no-history")
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote('print(' + repr(answer) + ')')} -- {{query}}"
    run_json(kb, "--command", command, "--command-timeout", f"{MAX_TIMEOUT_S:g}", "--no-history")


PATH_SETTINGS = [s for s in SETTINGS if s.path or s.name == "run-file"]


@pytest.mark.parametrize("setting", PATH_SETTINGS, ids=lambda s: s.name)
def test_a_path_past_path_max_is_refused_naming_the_setting(tmp_path: Path, setting: Setting) -> None:
    kb = write_tree(tmp_path / "kb", {"a.md": ANSWER, ".kb-eval.yml": GOLDEN})
    long = "/".join(["d" * NAME_MAX_BYTES] * (PATH_MAX_BYTES // NAME_MAX_BYTES + 1))
    flag = f"--{setting.name}"
    arguments = ["--kb-path", long] if flag == "--kb-path" else ["--kb-path", str(kb), flag, long]
    result = run(Path(arguments[1]), *arguments[2:], "--format", "json")
    assert result.code == ExitCode.BAD_INPUT
    assert any(f"--{name}" in result.stderr for name in (setting.name, *setting.aliases)), result.stderr


def test_a_path_just_under_the_limit_is_not_refused(tmp_path: Path) -> None:
    kb = write_tree(tmp_path / "kb", {"a.md": ANSWER, ".kb-eval.yml": GOLDEN})
    run_json(kb, "--cache-dir", str(tmp_path / ("c" * NAME_MAX_BYTES)), "--no-history")


def test_a_link_loop_at_a_path_input_is_exit_2_naming_it(tmp_path: Path) -> None:
    kb = write_tree(tmp_path / "kb", {"a.md": ANSWER, ".kb-eval.yml": GOLDEN})
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    assert "kb-path" in refused(tmp_path / "l1")
    history = refused(kb, "--history", tmp_path / "l1" / "h.json")
    assert "history" in history and "symbolic links" in history
    assert "--golden" in refused(kb, "--golden", tmp_path / "l1")


@pytest.mark.parametrize("name", ["kb-path", "report", "history", "cache-dir"])
def test_a_link_loop_at_an_action_path_input_is_an_input_error_naming_the_input(tmp_path: Path, name: str) -> None:
    # Python 3.11's Path.resolve() raises RuntimeError on a loop: that was exit 3 in the Action.
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    with pytest.raises(InputError) as raised:
        workspace_path(tmp_path, "l1/x", name)
    assert raised.value.field == name and "symbolic links" in str(raised.value)
    assert workspace_path(tmp_path, "real/x", name) == "real/x"  # the near miss


# -- text that is not text, from every retriever ---------------------------------------------------

LONE = '{"results": [{"path": "a\\ud800.md", "score": 1}]}'
PAIR = '{"results": [{"path": "a\\ud83d\\ude80.md", "score": 1}]}'
"""The near miss: a surrogate pair escaped in JSON is one character (U+1F680), and fine."""


def test_a_lone_surrogate_from_an_http_service_is_exit_2_naming_the_service(tmp_path: Path) -> None:
    kb = write_tree(tmp_path / "kb", {"a.md": ANSWER, ".kb-eval.yml": GOLDEN, "a\U0001f680.md": ANSWER})
    with running(lambda request: Reply(body=LONE.encode())) as server:
        stderr = refused(kb, "--http-url", server.url, "--no-history")
    assert "surrogate" in stderr and ("--http-url" in stderr or server.url in stderr)
    with running(lambda request: Reply(body=PAIR.encode())) as server:
        run_json(kb, "--http-url", server.url, "--no-history")


@pytest.mark.parametrize(("answer", "ok"), [(LONE, False), (PAIR, True)])
def test_a_lone_surrogate_from_a_command_is_exit_2_naming_the_command(tmp_path: Path, answer: str, ok: bool) -> None:
    kb = write_tree(tmp_path / "kb", {"a.md": ANSWER, ".kb-eval.yml": GOLDEN, "a\U0001f680.md": ANSWER})
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote('print(' + repr(answer) + ')')} -- {{query}}"
    if ok:
        run_json(kb, "--command", command, "--no-history")
    else:
        stderr = refused(kb, "--command", command, "--no-history")
        assert "surrogate" in stderr and f"command {sys.executable}" in stderr


@pytest.mark.parametrize(("path", "ok"), [("a\\ud800.md", False), ("a\\ud83d\\ude80.md", True)])
def test_a_lone_surrogate_in_a_run_file_is_exit_2_naming_the_file(tmp_path: Path, path: str, ok: bool) -> None:
    kb = write_tree(tmp_path / "kb", {"a.md": ANSWER, ".kb-eval.yml": GOLDEN, "a\U0001f680.md": ANSWER})
    run_file = tmp_path / "run.jsonl"
    run_file.write_text('{"id": "q1", "hits": [{"path": "' + path + '", "score": 1}]}\n', encoding="utf-8")
    if ok:
        run_json(kb, "--run-file", run_file, "--no-history")
    else:
        stderr = refused(kb, "--run-file", run_file, "--no-history")
        assert "surrogate" in stderr and "run.jsonl" in stderr
