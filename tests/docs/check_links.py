#!/usr/bin/env python3
"""Check the links of README.md and of the book (book/src), without mdBook.

For README.md and every Markdown page under book/src:

- each relative link (and each `{{#include}}` of mdBook) names a file or
  directory that exists;
- each `#anchor` names a heading of the page it points at, under GitHub's
  slug rules and, for pages of the book, mdBook's as well (the book is read
  both on a git forge and as HTML);
- a page of the book links only inside book/src: anything else is missing
  from the built book (name such a file in backticks instead);
- every page under book/src is listed in SUMMARY.md, and every entry of
  SUMMARY.md exists;
- every path ARCHITECTURE.md, CONTRIBUTING.md and SECURITY.md name in a
  code span that starts at a top-level entry of the repository exists.

Links inside code (fenced blocks and code spans) are not links. Absolute
URLs (`https:`, `mailto:`, ...) are not fetched.

Prints every problem as `FILE:LINE: message` and exits 1 if there is any;
otherwise prints one line counting what was checked and exits 0.

Usage: python3 tests/docs/check_links.py [REPOSITORY_ROOT]
"""

import glob
import os
import re
import sys
import unicodedata
from urllib.parse import unquote

BOOK_SRC = os.path.join("book", "src")
SUMMARY = os.path.join(BOOK_SRC, "SUMMARY.md")

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
# [text](target "title") and ![alt](target); the text may hold one level of
# brackets and may span lines.
INLINE_LINK = re.compile(
    r"!?\[(?P<text>(?:[^\[\]]|\[[^\[\]]*\])*)\]"
    r"\(\s*(?P<target><[^<>\n]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)"
)
REFERENCE_DEF = re.compile(r"^ {0,3}\[(?P<label>[^\]]+)\]:\s*(?P<target><[^>]*>|\S+)", re.M)
INCLUDE = re.compile(r"\{\{#(?:include|rustdoc_include)\s+(?P<path>[^\s}:]+)[^}]*\}\}")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def blank(text, start, end):
    """`text` with [start, end) replaced by spaces, line breaks kept."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def without_code(text):
    """The text with fenced code blocks and code spans blanked out, so that
    offsets (and so line numbers) stay those of the file."""
    lines = text.split("\n")
    out = []
    fence = None
    for line in lines:
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            out.append(" " * len(line))
        elif fence is not None:
            closing = match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence)
            if closing and line.strip() == match.group(1):
                fence = None
            out.append(" " * len(line))
        else:
            out.append(line)
    text = "\n".join(out)
    for span in reversed(list(CODE_SPAN.finditer(text))):
        if "\n\n" not in span.group(0):
            text = blank(text, span.start(), span.end())
    return text


def expand_includes(text, directory, seen=()):
    """The text with mdBook's `{{#include FILE}}` replaced by the file, so
    that headings of an included page count."""

    def include(match):
        path = os.path.normpath(os.path.join(directory, match.group("path")))
        if path in seen or not os.path.isfile(path):
            return match.group(0)
        with open(path, encoding="utf-8") as f:
            return expand_includes(f.read(), os.path.dirname(path), seen + (path,))

    return INCLUDE.sub(include, text)


def heading_texts(text):
    """The text of every heading outside code blocks, in order."""
    lines = text.split("\n")
    texts = []
    fence = None
    previous = ""
    for line in lines:
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            previous = ""
            continue
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            continue
        atx = ATX.match(line)
        if atx:
            content = re.sub(r"[ \t]+#+$", "", atx.group(2) or "")
            texts.append(content)
            previous = ""
            continue
        if SETEXT.match(line) and previous.strip() and not previous.startswith((" " * 4, "\t")):
            texts.append(previous.strip())
            previous = ""
            continue
        previous = line
    return texts


def plain(heading):
    """A heading's text as rendered: links become their text, code spans
    their code, emphasis markers go."""
    heading = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", heading)
    heading = heading.replace("`", "")
    heading = re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", heading)
    heading = re.sub(r"<[^>]*>", "", heading)
    return heading.strip()


def github_slug(heading):
    """GitHub's anchor: lower case, punctuation dropped, spaces to `-`."""
    out = []
    for ch in plain(heading).lower():
        category = unicodedata.category(ch)
        if ch == " ":
            out.append("-")
        elif ch in "-_" or category[0] in "LNM":
            out.append(ch)
    return "".join(out)


def mdbook_slug(heading):
    """mdBook's anchor (`normalize_id`): alphanumerics, `_` and `-` kept,
    whitespace to `-`, the rest dropped, ASCII lowered."""
    out = []
    for ch in plain(heading):
        if ch.isalnum() or ch in "_-":
            out.append(ch.lower() if ch.isascii() else ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


def anchors(headings, slug):
    """Every anchor a page has: repeated slugs get `-1`, `-2`, ..."""
    seen = {}
    result = set()
    for heading in headings:
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


# Pages whose code spans name files of the repository: each such path must
# exist (see Checker.check_named_paths).
NAMED_PATH_PAGES = ["ARCHITECTURE.md", "CONTRIBUTING.md", "SECURITY.md"]
CODE_SPAN = re.compile(r"`([^`]+)`")
NAMED_PATH = re.compile(r"^[A-Za-z0-9_.{},*\-/]+$")
MCP_METHOD = re.compile(r"^tools/(call|list|list_changed)$")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*$")


def expand_braces(path):
    """`a/{b,c}.rs` as `a/b.rs` and `a/c.rs`."""
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    return [
        expanded
        for part in match.group(1).split(",")
        for expanded in expand_braces(path[: match.start()] + part + path[match.end() :])
    ]


class Checker:
    def __init__(self, root):
        self.root = root
        self.problems = []
        self.links = 0
        self.pages = 0
        self.anchor_cache = {}

    def rel(self, path):
        return os.path.relpath(path, self.root)

    def problem(self, path, line, message):
        self.problems.append(f"{self.rel(path)}:{line}: {message}")

    def page_anchors(self, path):
        """(GitHub anchors, mdBook anchors) of the page at `path`."""
        if path not in self.anchor_cache:
            with open(path, encoding="utf-8") as f:
                text = expand_includes(f.read(), os.path.dirname(path))
            headings = heading_texts(text)
            self.anchor_cache[path] = (anchors(headings, github_slug), anchors(headings, mdbook_slug))
        return self.anchor_cache[path]

    def in_book(self, path):
        book = os.path.join(self.root, BOOK_SRC)
        return os.path.commonpath([os.path.abspath(path), book]) == book

    def check_target(self, page, line, target):
        """One link target of `page` (a file path), found on `line`."""
        self.links += 1
        if target.startswith("<") and target.endswith(">"):
            target = target[1:-1]
        if not target:
            self.problem(page, line, "empty link target")
            return
        if SCHEME.match(target) or target.startswith("//"):
            return
        path_part, _, anchor = target.partition("#")
        path_part = unquote(path_part.split("?", 1)[0])
        if path_part:
            resolved = os.path.normpath(os.path.join(os.path.dirname(page), path_part))
        else:
            resolved = page
        shown = target if len(target) <= 80 else target[:77] + "..."
        if not os.path.exists(resolved):
            self.problem(page, line, f"broken link {shown}: {self.rel(resolved)} does not exist")
            return
        if self.in_book(page) and not self.in_book(resolved):
            self.problem(
                page,
                line,
                f"link {shown} leaves book/src: the built book does not have {self.rel(resolved)}; "
                "name it in backticks instead",
            )
            return
        if not anchor or not resolved.endswith(".md") or not os.path.isfile(resolved):
            return
        github, mdbook = self.page_anchors(resolved)
        anchor = unquote(anchor)
        both = self.in_book(page) and self.in_book(resolved)
        if anchor not in github:
            self.problem(page, line, f"broken anchor {shown}: {self.rel(resolved)} has no heading #{anchor}")
        elif both and anchor not in mdbook:
            self.problem(
                page, line, f"anchor {shown}: GitHub has #{anchor} in {self.rel(resolved)}, but mdBook does not"
            )

    def check_page(self, page):
        self.pages += 1
        with open(page, encoding="utf-8") as f:
            raw = f.read()
        text = without_code(raw)

        def line_of(offset):
            return text.count("\n", 0, offset) + 1

        for match in INLINE_LINK.finditer(text):
            self.check_target(page, line_of(match.start("target")), match.group("target"))
        for match in REFERENCE_DEF.finditer(text):
            self.check_target(page, line_of(match.start("target")), match.group("target"))
        # mdBook's includes sit in code blocks too: look for them in the raw text.
        for match in INCLUDE.finditer(raw):
            self.links += 1
            path = os.path.normpath(os.path.join(os.path.dirname(page), match.group("path")))
            if not os.path.isfile(path):
                self.problem(
                    page, raw.count("\n", 0, match.start()) + 1, f"include {match.group('path')}: no such file"
                )

    def check_summary(self, pages):
        summary = os.path.join(self.root, SUMMARY)
        if not os.path.isfile(summary):
            self.problem(summary, 1, "book/src/SUMMARY.md does not exist")
            return
        with open(summary, encoding="utf-8") as f:
            text = without_code(f.read())
        listed = set()
        for match in INLINE_LINK.finditer(text):
            target = match.group("target").strip("<>")
            if not target or SCHEME.match(target):
                continue
            path = os.path.normpath(os.path.join(os.path.dirname(summary), unquote(target.split("#", 1)[0])))
            listed.add(path)
        for page in sorted(pages):
            if page != summary and page not in listed:
                self.problem(page, 1, "this page is not listed in book/src/SUMMARY.md")

    def check_named_paths(self, page):
        """Every path `page` names in a code span that starts at a
        top-level entry of the repository (`host/pipeline/src/state.rs`,
        `tests/fleet/`, `Makefile`) exists; `{a,b}` alternatives and `*`
        globs must each match something. Paths relative to a module named
        nearby (`audit/files.rs`) are not checked."""
        with open(page, encoding="utf-8") as f:
            raw = f.read()
        top = set(os.listdir(self.root))
        for number, line in enumerate(raw.split("\n"), start=1):
            for span in CODE_SPAN.findall(line):
                for word in span.split():
                    word = word.rstrip(".,:;)")
                    first = word.split("/", 1)[0]
                    if "/" not in word or first not in top or not NAMED_PATH.match(word):
                        continue
                    # `tools/call`, `tools/list`: MCP methods, not the tools/ directory;
                    # `tools/NAME`: a placeholder.
                    if MCP_METHOD.match(word) or any(PLACEHOLDER.match(part) for part in word.split("/")):
                        continue
                    self.links += 1
                    for alternative in expand_braces(word.rstrip("/")):
                        if not glob.glob(os.path.join(self.root, alternative)):
                            self.problem(page, number, f"names {word}, but {alternative} does not exist")

    def run(self):
        book = os.path.join(self.root, BOOK_SRC)
        pages = []
        for directory, _, files in os.walk(book):
            pages.extend(os.path.join(directory, name) for name in files if name.endswith(".md"))
        pages = sorted(os.path.normpath(p) for p in pages)
        readme = os.path.join(self.root, "README.md")
        for page in [readme] + pages:
            if os.path.isfile(page):
                self.check_page(page)
            else:
                self.problem(page, 1, "does not exist")
        self.check_summary(pages)
        for name in NAMED_PATH_PAGES:
            page = os.path.join(self.root, name)
            if os.path.isfile(page):
                self.check_named_paths(page)
            else:
                self.problem(page, 1, "does not exist")
        return self.problems


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", ".."))
    checker = Checker(root)
    problems = checker.run()
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_links: {len(problems)} broken of {checker.links} links in {checker.pages} pages")
        return 1
    print(f"check_links: {checker.links} links in {checker.pages} pages, none broken")
    return 0


if __name__ == "__main__":
    sys.exit(main())
