"""MkDocs hooks (mkdocs.yml: `hooks`): README.md, ARCHITECTURE.md and CHANGELOG.md become pages of the site.

They stay at the repository's root, where GitHub shows them, and every link is written for GitHub: a page under
`docs/` links the README as `../README.md`, the README links a page as `docs/security.md`. On the site the root files
are pages beside the others (`index.md`, `architecture.md`, `changelog.md`), so each relative link is rewritten to
where its target is on the site. A link to any other file outside `docs/` is left as written, and the strict build
fails on it: the site has no such page.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # MkDocs itself is imported by its hooks only: tests/test_docs.py reads ROOT_PAGES without it
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent

ROOT_PAGES = {"README.md": "index.md", "ARCHITECTURE.md": "architecture.md", "CHANGELOG.md": "changelog.md"}
"""Each file at the repository's root that is a page, and the page it is on the site."""

_LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    from mkdocs.structure.files import File

    for source, page in ROOT_PAGES.items():
        files.append(File.generated(config, page, abs_src_path=str(ROOT / source)))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    site_dir = posixpath.dirname(page.file.src_uri)
    sources = {site: source for source, site in ROOT_PAGES.items()}
    repo_dir = posixpath.dirname(sources.get(page.file.src_uri, f"docs/{page.file.src_uri}"))
    lines, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced:
            line = _LINK.sub(lambda m: m[1] + site_link(m[2], repo_dir, site_dir) + m[3], line)
        lines.append(line)
    return "\n".join(lines)


def site_link(target: str, repo_dir: str, site_dir: str) -> str:
    """`target`, written relative to `repo_dir` in the repository, relative to `site_dir` on the site."""
    path, hash_, anchor = target.partition("#")
    if not path or re.match(r"[a-z][a-z0-9+.-]*:", path):  # an anchor on the page, a URL, mailto:
        return target
    in_repo = posixpath.normpath(posixpath.join(repo_dir, path))
    if in_repo in ROOT_PAGES:
        on_site = ROOT_PAGES[in_repo]
    elif in_repo.startswith("docs/"):
        on_site = in_repo.removeprefix("docs/")
    else:
        return target
    return posixpath.relpath(on_site, site_dir or ".") + hash_ + anchor
