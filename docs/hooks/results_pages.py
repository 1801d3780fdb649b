"""MkDocs hook: the pages' generated parts — result tables, the reproductions table, the command-line reference.

A page asks for generated content with a directive, ``{{ name(arguments) }}``, on a line of its own (a block)
or inside a sentence (a value); the arguments are Python literals:

- ``{{ results_table("offline_rl/cube_single", "methods") }}``: table ``methods`` of
  ``results/offline_rl/cube_single.json``, and under it where it came from (command, commit, machine, date,
  seeds) with a link to the file;
- ``{{ results_value("offline_rl/cube_single", "methods", {"method": "BC"}, "success") }}``: one cell, in a
  sentence;
- ``{{ reproductions_table() }}`` / ``{{ reproductions_summary() }}``: the reproductions page, from
  ``docs/reproductions.yml`` (the papers' claims and verdicts) and the results files it points at;
- ``{{ cli_reference() }}``: every ``embodia`` subcommand and its options, read from the argparse parsers.

A directive that names a missing file, table, row or column, or a results file without the fields every
table shows, fails the build with one line saying which. The results files are also copied into the site
(``results/...json``) so each table links to its data.

``python docs/hooks/results_pages.py`` rewrites the reproductions summary in README.md (between
``<!-- reproductions-summary -->`` markers; ``make docs`` runs it); ``--check`` only says whether it is current.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from embodia.core.results import (
    ResultsError,
    format_cell,
    read_results,
    table_of,
)

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
REPRODUCTIONS = ROOT / "docs" / "reproductions.yml"
README = ROOT / "README.md"
SUMMARY_MARKERS = ("<!-- reproductions-summary -->", "<!-- /reproductions-summary -->")
VERDICTS = ("reproduced", "partly", "not reproduced", "not measurable here")
REPRODUCTION_FIELDS = ("system", "paper", "page", "claim", "setting", "measured", "verdict")
PAPER_IDS = {"arxiv": re.compile(r"\d{4}\.\d{4,5}"), "openreview": re.compile(r"[A-Za-z0-9_-]{6,}")}
DIRECTIVE = re.compile(r"\{\{\s*([a-z_]+)\((.*?)\)\s*\}\}")
FENCE = re.compile(r"^(```|~~~)")


class DirectiveError(Exception):
    """A directive that cannot be rendered (the build fails with this message)."""


# --- results files -------------------------------------------------------------------------------------


def results_path(name: str, results_dir: Path = RESULTS) -> Path:
    return results_dir / f"{name}.json"


def load(name: str, results_dir: Path = RESULTS) -> dict[str, Any]:
    try:
        return read_results(results_path(name, results_dir))
    except ResultsError as error:
        raise DirectiveError(str(error)) from None


def short_commit(commit: str) -> str:
    return commit[:7] if re.fullmatch(r"[0-9a-f]{40}", commit) else commit


def provenance_note(payload: Mapping[str, Any], link: str) -> str:
    """One line under a table: how, where and when its numbers were measured, and the file itself."""
    machine = payload["machine"] or {}
    cpu = machine.get("cpu") or "CPU not recorded"
    cores = machine.get("cores")
    where = f"{cpu}, {cores} cores" if cores else cpu
    seeds = payload["seeds"]
    seed_text = f"; seeds {', '.join(str(s) for s in seeds)}" if seeds else ""
    dirty = " (with uncommitted changes)" if payload.get("dirty") else ""
    verb = "Measured"
    if payload["provenance"] == "transcribed":
        verb = f"Transcribed from {payload['source']}; measured"
    return (
        f'<small class="results-provenance">{verb} by `{payload["command"]}` at commit '
        f"`{short_commit(payload['commit'])}`{dirty} on {where}, {payload['date']}{seed_text} — "
        f"[results file]({link})</small>"
    )


def results_link(name: str, page: str) -> str:
    """The link from a page (its source path under docs/, e.g. ``guides/offline-rl.md``) to a results file."""
    return "../" * page.count("/") + f"results/{name}.json"


def results_table(name: str, table: str, *, page: str = "", results_dir: Path = RESULTS) -> str:
    payload = load(name, results_dir)
    try:
        rendered = table_of(payload, table, where=name).markdown()
    except ResultsError as error:
        raise DirectiveError(str(error)) from None
    return f"{rendered}\n\n{provenance_note(payload, results_link(name, page))}"


def find_row(payload: Mapping[str, Any], name: str, table: str, where: Mapping[str, Any]) -> dict[str, Any]:
    try:
        rows = table_of(payload, table, where=name).rows
    except ResultsError as error:
        raise DirectiveError(str(error)) from None
    matches = [row for row in rows if all(row.get(k) == v for k, v in where.items())]
    if len(matches) != 1:
        raise DirectiveError(f"results file {name}, table {table!r}: {len(matches)} rows match {dict(where)}")
    return matches[0]


def cell(name: str, table: str, where: Mapping[str, Any], column: str, results_dir: Path = RESULTS) -> str:
    payload = load(name, results_dir)
    row = find_row(payload, name, table, where)
    columns = {c["key"]: c for c in payload["tables"][table]["columns"]}
    if column not in columns:
        raise DirectiveError(f"results file {name}, table {table!r} has no column {column!r}")
    return format_cell(row[column], columns[column].get("format", ""))


def results_value(
    name: str,
    table: str,
    where: Mapping[str, Any],
    column: str,
    *,
    page: str = "",
    results_dir: Path = RESULTS,
) -> str:
    return cell(name, table, where, column, results_dir)


# --- the reproductions page ----------------------------------------------------------------------------


def reproductions(path: Path = REPRODUCTIONS) -> list[dict[str, Any]]:
    """The rows of ``docs/reproductions.yml``, checked for the fields the page shows."""
    rows = yaml.safe_load(path.read_text())
    if not isinstance(rows, list):
        raise DirectiveError(f"{path}: expected a list of systems")
    for row in rows:
        missing = [k for k in REPRODUCTION_FIELDS if not row.get(k)]
        if missing:
            raise DirectiveError(f"{path}: {row.get('system', '?')} lacks {', '.join(missing)}")
        ids = [key for key, pattern in PAPER_IDS.items() if pattern.fullmatch(str(row.get(key, "")))]
        if not ids:
            raise DirectiveError(
                f"{path}: {row['system']} needs an 'arxiv' id (or, without one, 'openreview')"
            )
        if row["verdict"] not in VERDICTS:
            raise DirectiveError(f"{path}: {row['system']}: verdict must be one of {VERDICTS}")
        if row["verdict"] != "reproduced" and not row.get("reason"):
            raise DirectiveError(f"{path}: {row['system']} is {row['verdict']!r} but gives no reason")
        for part in row.get("per_environment", []):
            if not part.get("environment") or part.get("verdict") not in VERDICTS:
                raise DirectiveError(
                    f"{path}: {row['system']}: every per_environment entry needs an environment and a verdict "
                    f"among {VERDICTS}"
                )
            if part["verdict"] != "reproduced" and not part.get("reason"):
                raise DirectiveError(
                    f"{path}: {row['system']}, {part['environment']} is {part['verdict']!r} but gives no reason"
                )
    return rows


def verdict_text(row: Mapping[str, Any]) -> str:
    """The verdict cell: the overall verdict and its reason, then one line per environment where given."""
    text = f"**{row['verdict']}**" + (f": {row['reason']}" if row.get("reason") else "")
    for part in row.get("per_environment", []):
        reason = f": {part['reason']}" if part.get("reason") else ""
        text += f"<br>{part['environment']} — **{part['verdict']}**{reason}"
    return text.replace("\n", " ")


def measured_text(row: Mapping[str, Any], page: str, results_dir: Path) -> str:
    parts = []
    for ref in row["measured"]:
        value = cell(ref["file"], ref["table"], ref["row"], ref["column"], results_dir)
        link = results_link(ref["file"], page)
        parts.append(f"{ref['label']}: [{value}]({link})")
    return "<br>".join(parts)


def page_link(target: str, page: str) -> str:
    """A link from ``page`` to another page (``guides/x.md#anchor``; both paths under docs/)."""
    return "../" * page.count("/") + target


def paper_reference(row: Mapping[str, Any]) -> str:
    """The paper's title and a link to it: arXiv where it has an id there, else OpenReview."""
    if row.get("arxiv"):
        return f"{row['paper']}, [arXiv:{row['arxiv']}](https://arxiv.org/abs/{row['arxiv']})"
    return f"{row['paper']}, [OpenReview {row['openreview']}](https://openreview.net/forum?id={row['openreview']})"


def reproductions_table(*, page: str = "", results_dir: Path = RESULTS, path: Path = REPRODUCTIONS) -> str:
    header = (
        "| system | paper's claim | embodia's setting | embodia measured | verdict |\n|---|---|---|---|---|"
    )
    lines = [header]
    sources = []
    for row in reproductions(path):
        verdict = verdict_text(row)
        paper = f"[{row['system']}]({page_link(row['page'], page)})<br><small>{paper_reference(row)}</small>"
        claim = row["claim"].strip().replace("\n", " ")
        setting = row["setting"].strip().replace("\n", " ")
        lines.append(
            f"| {paper} | {claim} | {setting} | {measured_text(row, page, results_dir)} | {verdict} |"
        )
        for ref in row["measured"]:
            payload = load(ref["file"], results_dir)
            sources.append(
                f"- **{row['system']}** — {ref['label']}: `results/{ref['file']}.json`, "
                f"{payload['provenance']} by `{payload['command']}` (commit `{short_commit(payload['commit'])}`, "
                f"{payload['date']})"
            )
    return "\n".join(lines) + "\n\n### Where each number comes from\n\n" + "\n".join(dict.fromkeys(sources))


def summary_counts(path: Path = REPRODUCTIONS) -> dict[str, int]:
    counts = dict.fromkeys(VERDICTS, 0)
    for row in reproductions(path):
        counts[row["verdict"]] += 1
    return counts


def reproductions_summary(*, page: str = "", results_dir: Path = RESULTS, path: Path = REPRODUCTIONS) -> str:
    counts = summary_counts(path)
    total = sum(counts.values())
    parts = [f"{counts['reproduced']} of {total} reproduced"]
    parts += [f"{counts[v]} {v}" for v in VERDICTS[1:] if counts[v]]
    return ", ".join(parts)


# --- the command-line reference ------------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str]]:
    """A parser's subcommands: (name, parser, the one-line help its parent gives it)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return [(name, child, helps.get(name, "")) for name, child in action.choices.items()]
    return []


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            name = ", ".join(f"`{s}`" for s in action.option_strings)
            if action.nargs != 0:
                metavar = action.metavar or action.dest.upper()
                if isinstance(metavar, tuple):
                    metavar = " ".join(metavar)
                name += f" `{metavar}`"
        else:
            name = f"`{action.metavar or action.dest}`"
        text = (action.help or "").replace("%(default)s", str(action.default)).replace("%%", "%")
        text = text.replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")
        if action.choices and not isinstance(action.choices, dict):
            text += " (one of: " + ", ".join(f"`{c}`" for c in action.choices) + ")"
        default = action.default
        shown = "" if default in (None, argparse.SUPPRESS, False) or action.nargs == 0 else f"`{default}`"
        rows.append(f"| {name} | {text} | {shown} |")
    return rows


def cli_reference(*, page: str = "", results_dir: Path = RESULTS) -> str:
    """Every ``embodia`` subcommand: its description, usage and options, read from the parsers themselves."""
    from embodia.cli import build_parser

    out: list[str] = []

    def visit(parser: argparse.ArgumentParser, path: list[str], summary: str) -> None:
        children = _subcommands(parser)
        if path:
            out.append(f"{'#' * min(len(path) + 1, 4)} `embodia {' '.join(path)}`\n")
            text = parser.description or summary
            if text:
                out.append(text.strip().replace("%%", "%") + "\n")
            usage = parser.format_usage().removeprefix("usage: ").strip()
            out.append(f"```text\n{usage}\n```\n")
            rows = _option_rows(parser)
            if rows:
                out.append("| argument | what it does | default |\n|---|---|---|")
                out.extend(rows)
                out.append("")
        for name, child, help_text in children:
            visit(child, [*path, name], help_text)

    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # usage lines wrap the same wherever the site is built
    try:
        visit(build_parser(), [], "")
    finally:
        if columns is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = columns
    return "\n".join(out)


def cli_commands() -> list[str]:
    """Every subcommand path (``["run", "data generate", ...]``), as the reference lists them."""
    from embodia.cli import build_parser

    found: list[str] = []

    def visit(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for name, child, _ in _subcommands(parser):
            found.append(" ".join([*path, name]))
            visit(child, [*path, name])

    visit(build_parser(), [])
    return found


# --- directives ----------------------------------------------------------------------------------------

DIRECTIVES: dict[str, Callable[..., str]] = {
    "results_table": results_table,
    "results_value": results_value,
    "reproductions_table": reproductions_table,
    "reproductions_summary": reproductions_summary,
    "cli_reference": cli_reference,
}


def _call(name: str, arguments: str, page: str, results_dir: Path) -> str:
    if name not in DIRECTIVES:
        raise DirectiveError(f"unknown directive {name!r} (known: {', '.join(DIRECTIVES)})")
    try:
        call = ast.parse(f"f({arguments})", mode="eval").body
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except (SyntaxError, ValueError) as error:
        raise DirectiveError(f"{name}({arguments}): arguments must be Python literals ({error})") from None
    return DIRECTIVES[name](*args, **kwargs, page=page, results_dir=results_dir)


def render(markdown: str, page: str = "", results_dir: Path = RESULTS, where: str = "") -> str:
    """``markdown`` with every directive replaced by what it generates (fenced code is left alone)."""
    out, fenced = [], None
    for line in markdown.splitlines(keepends=True):
        fence = FENCE.match(line.lstrip())
        if fence:
            fenced = None if fenced == fence.group(1) else (fenced or fence.group(1))
        if fenced:
            out.append(line)
            continue
        try:
            out.append(DIRECTIVE.sub(lambda m: _call(m.group(1), m.group(2), page, results_dir), line))
        except DirectiveError as error:
            raise DirectiveError(f"{where}: {error}" if where else str(error)) from None
    return "".join(out)


def directives_of(markdown: str) -> list[tuple[str, str]]:
    """The directives of a page outside fenced code, as (name, arguments)."""
    found, fenced = [], None
    for line in markdown.splitlines():
        fence = FENCE.match(line.lstrip())
        if fence:
            fenced = None if fenced == fence.group(1) else (fenced or fence.group(1))
        if not fenced:
            found += DIRECTIVE.findall(line)
    return found


# --- MkDocs events -------------------------------------------------------------------------------------


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001  (MkDocs' signature)
    from mkdocs.exceptions import PluginError

    try:
        return render(markdown, page.file.src_uri, RESULTS, where=page.file.src_uri)
    except DirectiveError as error:
        raise PluginError(str(error)) from None


def on_files(files, config):  # noqa: ANN001, ANN201  (MkDocs' signature)
    """Copy every results file into the site, at ``results/<name>.json``."""
    from mkdocs.structure.files import File

    for path in sorted(RESULTS.rglob("*.json")):
        uri = "results/" + path.relative_to(RESULTS).as_posix()
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


# --- the README's summary line -------------------------------------------------------------------------


def readme_with_summary(text: str) -> str:
    start, end = SUMMARY_MARKERS
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"README.md has no {start} ... {end} block")
    line = f"{start}**Reproductions: {reproductions_summary()}** ([the table](docs/reproductions.md)){end}"
    return pattern.sub(lambda _: line, text)


def main() -> int:
    parser = argparse.ArgumentParser(description="Rewrite or check the README's reproductions summary.")
    parser.add_argument("--check", action="store_true", help="only report whether README.md is current")
    args = parser.parse_args()
    text = README.read_text()
    new = readme_with_summary(text)
    if args.check:
        if new != text:
            print("README.md's reproductions summary is stale: run python docs/hooks/results_pages.py")
            return 1
        return 0
    if new != text:
        README.write_text(new)
        print("README.md: reproductions summary updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
