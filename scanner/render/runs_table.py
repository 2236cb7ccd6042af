"""`kb-eval compare`'s table, as text for a terminal and as Markdown for a step summary.

Pure: the table in, a string out. Report names and retriever names are the user's text: shown()
in the terminal, escaped in Markdown.
"""

from __future__ import annotations

from scanner.compare.runs import Cell, RunsTable
from scanner.foundation.untrusted_text import shown
from scanner.render import phrases
from scanner.render.markdown import prose, text


def _cell(table: RunsTable, cell: Cell) -> str:
    if cell.value is None:
        return "-"
    if cell.delta is None or cell.test is None:
        return f"{cell.value:.4f}"
    mark = " *" if table.significant(cell) else ""
    return f"{cell.value:.4f} {cell.delta:+.4f} (p {cell.test.p_value:.3g}){mark}"


def _descriptions(table: RunsTable) -> list[str]:
    """What each run is and how it relates to the first, its name aside."""
    lines = []
    for number, named in enumerate(table.runs, 1):
        run = named.run
        if number == 1:
            relation = phrases.FIRST_RUN
        else:
            pairing = table.pairings[number - 2]
            relation = phrases.run_paired(pairing.queries) if pairing.paired else phrases.run_not_paired(pairing.reasons)
        lines.append(f"{shown(run.retriever_name)}, {run.timestamp}, {run.aggregate.query_count} queries; {relation}")
    return lines


def render_runs_text(table: RunsTable) -> str:
    header = ["metric", *(f"[{n}]" for n in range(1, len(table.runs) + 1))]
    body = [[row.metric.label, *(_cell(table, cell) for cell in row.cells)] for row in table.rows]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    legend = [f"[{n}] {shown(named.name)}: {line}" for n, (named, line) in enumerate(zip(table.runs, _descriptions(table)), 1)]
    lines = [phrases.runs_compared(len(table.runs), table.alpha, table.tag, "*"), *legend, ""]
    for line in [header, *body]:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())
    return "\n".join(lines) + "\n"


def render_runs_markdown(table: RunsTable) -> str:
    lines = ["### kb-eval: runs compared", "", text(phrases.runs_compared(len(table.runs), table.alpha, table.tag, "bold")), ""]
    for number, (named, line) in enumerate(zip(table.runs, _descriptions(table)), 1):
        lines.append(f"{number}. `{_code(named.name)}`: {prose(line)}")
    lines += ["", "| metric | " + " | ".join(f"{n}.&nbsp;`{_code(named.name)}`" for n, named in enumerate(table.runs, 1)) + " |",
              "| --- |" + " ---: |" * len(table.runs)]
    for row in table.rows:
        cells = [_markdown_cell(table, cell) for cell in row.cells]
        lines.append(f"| {row.metric.label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _markdown_cell(table: RunsTable, cell: Cell) -> str:
    # Non-breaking spaces keep a value, its change and its p-value on one line in a narrow column.
    shown_cell = _cell(table, cell).removesuffix(" *").replace(" ", "&nbsp;")
    return f"**{shown_cell}**" if table.significant(cell) else shown_cell


def _code(name: str) -> str:
    # A report name inside a one-backtick code span: a backtick or a line break in it is replaced, a pipe escaped.
    return " ".join(name.replace("`", "'").splitlines()).replace("|", "\\|")
