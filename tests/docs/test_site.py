"""The documentation site: it builds strictly, its tables come from results files, its references are complete."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def load_hook():
    spec = importlib.util.spec_from_file_location("results_pages", DOCS / "hooks" / "results_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pages = load_hook()


def markdown_pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)


def test_site_builds_strictly_without_a_warning(tmp_path):
    mkdocs = Path(sys.executable).with_name("mkdocs")
    out = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": f"{mkdocs.parent}:/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(tmp_path)},
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "WARNING" not in out.stderr, out.stderr[-3000:]
    site = tmp_path / "site"
    assert (site / "reproductions" / "index.html").is_file()
    # every results file travels with the site, so each table links to its data
    for path in (ROOT / "results").rglob("*.json"):
        assert (site / "results" / path.relative_to(ROOT / "results")).is_file()


def test_every_results_table_on_every_page_renders():
    rendered = 0
    for page in markdown_pages():
        text = page.read_text()
        out = pages.render(text, page=page.relative_to(DOCS).as_posix(), where=str(page))
        assert "{{" not in pages.DIRECTIVE.sub("", out) or "```" in text
        rendered += sum(1 for name, _ in pages.directives_of(text) if name == "results_table")
    assert rendered > 0


def table_directives() -> list[tuple[str, str]]:
    found = []
    for page in markdown_pages():
        for name, arguments in pages.directives_of(page.read_text()):
            if name == "results_table":
                file, table = eval(f"({arguments},)")[:2]  # noqa: S307  (literals, as the hook parses them)
                found.append((file, table))
    return found


def test_changing_a_value_in_a_results_file_changes_the_page(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(ROOT / "results", results)
    page = (DOCS / "benchmarks.md").read_text()
    payload = json.loads((results / "benchmarks" / "env_overhead.json").read_text())
    ratio_column = next(c for c in payload["tables"]["steps"]["columns"] if c["key"] == "ratio")
    before = pages.render(page, "benchmarks.md", results)
    old = pages.format_cell(payload["tables"]["steps"]["rows"][0]["ratio"], ratio_column["format"])
    assert f"| {old} |" in before
    payload["tables"]["steps"]["rows"][0]["ratio"] = 0.123456
    (results / "benchmarks" / "env_overhead.json").write_text(json.dumps(payload))
    after = pages.render(page, "benchmarks.md", results)
    assert "| 0.123 |" in after and after != before


def test_a_results_file_missing_a_field_a_page_needs_fails_the_page(tmp_path):
    for file, table in table_directives():
        results = tmp_path / file.replace("/", "_")
        shutil.copytree(ROOT / "results", results)
        path = results / f"{file}.json"
        payload = json.loads(path.read_text())
        column = payload["tables"][table]["columns"][-1]["key"]
        del payload["tables"][table]["rows"][0][column]
        path.write_text(json.dumps(payload))
        with pytest.raises(pages.DirectiveError, match=re.escape(file)):
            pages.results_table(file, table, results_dir=results)
        payload = json.loads((ROOT / "results" / f"{file}.json").read_text())
        del payload["commit"]
        path.write_text(json.dumps(payload))
        with pytest.raises(pages.DirectiveError, match="commit"):
            pages.results_table(file, table, results_dir=results)
        shutil.rmtree(results)


def test_unknown_directives_and_missing_tables_fail_with_the_page_named():
    with pytest.raises(pages.DirectiveError, match="x.md: unknown directive 'nonsense'"):
        pages.render("{{ nonsense() }}\n", where="x.md")
    with pytest.raises(pages.DirectiveError, match="has no table 'nope'"):
        pages.render('{{ results_table("benchmarks/env_overhead", "nope") }}\n')
    with pytest.raises(pages.DirectiveError, match="does not exist"):
        pages.render('{{ results_table("benchmarks/never_measured", "steps") }}\n')
    # fenced code shows directives as they are written
    assert pages.render("```\n{{ nonsense() }}\n```\n") == "```\n{{ nonsense() }}\n```\n"


def test_the_command_line_reference_lists_every_subcommand():
    reference = pages.cli_reference()
    commands = pages.cli_commands()
    assert {"run", "data generate", "bench offline-rl", "robot launch", "mcp"} <= set(commands)
    for command in commands:
        assert f"`embodia {command}`" in reference
    assert "--episodes" in reference and "--ray-address" in reference


def test_the_api_reference_covers_the_public_packages():
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    text = json.dumps(nav)
    for package in ("core", "envs", "data", "runner", "policies", "robot", "perception", "agents.tools"):
        name = package.replace(".", "-")
        page = DOCS / "reference" / "api" / f"{name}.md"
        assert f"reference/api/{name}.md" in text
        assert f"::: embodia.{package}\n" in page.read_text()


def test_reproductions_table_has_a_row_per_seed_system_with_its_fields():
    rows = pages.reproductions()
    assert len(rows) == 19
    assert len({row["system"] for row in rows}) == 19
    for row in rows:
        arxiv, openreview = str(row.get("arxiv", "")), str(row.get("openreview", ""))
        assert re.fullmatch(r"\d{4}\.\d{4,5}", arxiv) or re.fullmatch(r"[A-Za-z0-9_-]{6,}", openreview), row[
            "system"
        ]
        assert (DOCS / row["page"].partition("#")[0]).is_file(), row["page"]
        for ref in row["measured"]:
            payload = pages.load(ref["file"])
            assert payload["command"], ref
    table = pages.reproductions_table(page="reproductions.md")
    assert len([line for line in table.splitlines() if line.startswith("| [")]) == 19


def test_readme_is_short_current_and_its_links_resolve():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    assert "make demo" in text and "make test" in text
    assert pages.readme_with_summary(text) == text, "run python docs/hooks/results_pages.py"
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


def test_a_claim_on_several_environments_carries_a_verdict_per_environment(tmp_path):
    rows = yaml.safe_load((DOCS / "reproductions.yml").read_text())
    deas = next(row for row in rows if row["system"] == "DEAS")
    deas["per_environment"] = [
        {"environment": "CubeDouble", "verdict": "reproduced"},
        {"environment": "Scene", "verdict": "not reproduced", "reason": "every method at the floor"},
    ]
    path = tmp_path / "reproductions.yml"
    path.write_text(yaml.safe_dump([deas]))
    table = pages.reproductions_table(page="reproductions.md", path=path)
    assert "CubeDouble — **reproduced**" in table
    assert "Scene — **not reproduced**: every method at the floor" in table
    deas["per_environment"] = [{"environment": "Scene", "verdict": "not reproduced"}]
    path.write_text(yaml.safe_dump([deas]))
    with pytest.raises(pages.DirectiveError, match="Scene is 'not reproduced' but gives no reason"):
        pages.reproductions(path)
    deas["per_environment"] = [{"environment": "Scene", "verdict": "maybe"}]
    path.write_text(yaml.safe_dump([deas]))
    with pytest.raises(pages.DirectiveError, match="per_environment"):
        pages.reproductions(path)
