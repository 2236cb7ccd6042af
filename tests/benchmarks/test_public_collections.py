"""bench/public_collections.py: the collections' location is an argument, and every collection is
written in the three title layouts with only the title's place changed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from public_collections import Layout, page, relayout

BODY = "## Naming\n\nShort-lived work goes on a branch.\n"


@pytest.mark.parametrize("written", list(Layout))
@pytest.mark.parametrize("wanted", list(Layout))
def test_a_page_in_any_layout_is_rewritten_into_any_other(written: Layout, wanted: Layout) -> None:
    source = page("Branch and Merge Policy", BODY, written, "topic: workflow\n")
    assert relayout(source, "branching", wanted) == page("Branch and Merge Policy", BODY, wanted, "topic: workflow\n")


def test_the_layouts_place_the_title_where_they_say() -> None:
    assert page("T", "text", Layout.FRONTMATTER) == '---\ntitle: "T"\n---\ntext\n'
    assert page("T", "text", Layout.HEADING) == "# T\n\ntext\n"
    assert page("T", "text", Layout.BOTH) == '---\ntitle: "T"\n---\n# T\n\ntext\n'
    # Other frontmatter keys stay in every layout, the `# Title` only layout included.
    assert page("T", "text", Layout.HEADING, "topic: x\n") == "---\ntopic: x\n---\n# T\n\ntext\n"


def test_a_first_heading_that_is_not_the_title_stays_in_the_body() -> None:
    source = '---\ntitle: "Policy"\n---\n# Something else\n\ntext\n'
    assert relayout(source, "stem", Layout.HEADING) == "# Policy\n\n# Something else\n\ntext\n"


def test_a_page_without_a_title_takes_the_file_name() -> None:
    assert relayout("just text\n", "branching", Layout.FRONTMATTER) == '---\ntitle: "branching"\n---\njust text\n'


def test_the_converter_refuses_without_a_copy_of_a_source_and_names_the_fix(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH / "public_collections.py"), "--sources", str(tmp_path / "none"),
         "--out", str(tmp_path / "out"), "--only", "cisi"],
        capture_output=True, text=True, check=False, timeout=60,
    )
    assert result.returncode == 2
    assert "cisi: no git copy of glaucapicea/ir-model-evaluation" in result.stderr and "--clone" in result.stderr
    assert not (tmp_path / "out" / "cisi").exists()


def test_the_converter_needs_the_sources_argument(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH / "public_collections.py"), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, check=False, timeout=60,
    )
    assert result.returncode == 2 and "--sources" in result.stderr
