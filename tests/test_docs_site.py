"""The docs site builds with warnings as errors, its CLI reference is complete, the README is short.

MkDocs' strict build fails on a broken link or anchor, a page missing from
the nav, or a snippet that does not resolve; the command-line reference is
written from the argument parsers during that build.
"""

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from tfrecord_pipelines.cli import data_service, main
from tfrecord_pipelines.components.private_api.argparse_private import actions, sub_commands

README_MAX_LINES = 250


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).parent / "mkdocs"
    built = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return out


def test_every_page_in_the_docs_folder_is_built(site):
    pages = [p for p in (REPO_ROOT / "docs").rglob("*.md") if "hooks" not in p.parts]
    assert len(pages) >= 15
    for page in pages:
        relative = page.relative_to(REPO_ROOT / "docs").with_suffix("")
        built = (
            site / relative / "index.html"
            if relative.name != "index"
            else (site / relative.parent / "index.html")
        )
        assert built.is_file(), f"{page} was not built"


def test_the_cli_reference_holds_every_command_and_option(site):
    page = (site / "reference" / "cli" / "index.html").read_text()
    assert "cli-reference" not in page
    for parser in (main.build_parser(), data_service.build_parser()):
        for name, command in sub_commands(parser).items():
            assert f"<code>{name}</code>" in page, name
            for action in actions(command):
                for option in action.option_strings:
                    assert option in page, f"{name} {option}"


def test_contributing_is_included_whole(site):
    page = (site / "contributing" / "index.html").read_text()
    assert "Where new code goes" in page
    assert "--8&lt;--" not in page and "--8<--" not in page


def test_the_reuse_guide_shows_only_code_the_suite_runs(site):
    """Each Python block of the reuse guide is included from tests/user_project, which
    test_reuse_in_own_project runs from the installed wheel; the built page holds the code."""
    guide = (REPO_ROOT / "docs" / "guides" / "reuse.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", guide, flags=re.S)
    assert len(blocks) >= 6
    included = []
    for block in blocks:
        (include,) = re.fullmatch(r'--8<-- "(tests/user_project/[^"]+)"\n', block).groups()
        included.append(include)
    page = html.unescape(
        re.sub(r"<[^>]+>", "", (site / "guides" / "reuse" / "index.html").read_text())
    )
    assert "--8<--" not in page and "[start:" not in page
    for code in ("Transform(", "Evaluator(", "ExecutorClassSpec(", "run_fn", "preprocessing_fn"):
        assert code in page, code
    assert any(i.endswith(":ours") for i in included)


def test_the_readme_opens_with_the_two_commands_and_fits_on_a_few_screens():
    readme = (REPO_ROOT / "README.md").read_text().splitlines()
    assert len(readme) <= README_MAX_LINES, len(readme)
    block = readme[readme.index("```sh") + 1 : readme.index("```", readme.index("```sh") + 1)]
    assert [line.split()[:2] for line in block] == [["make", "run"], ["make", "test"]]


def test_the_readme_links_resolve_to_files_in_the_repository():
    text = (REPO_ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if not link.startswith(("http://", "https://"))]
    assert len(local) >= 10
    for link in local:
        assert (REPO_ROOT / link).exists(), f"README links to {link}, which does not exist"
