"""repo/cited_files: every file a comment or a document names is in the repository.

Scans the tracked text files (`git ls-files` when the tree is a git checkout, else a
walk of the tree) and checks:

1. A token that looks like a path of this repository resolves to a file. A token is
   `a/b.ext` (at least one '/', a file extension, not the tail of a longer path such
   as build/… or /usr/…) whose first component says where it lives:
   - a top-level folder (docs/, runner/, tools/, tests/, cmake/, include/, suites/,
     goldens/, compare/, .ci/): relative to the repository root; the installed
     layout `include/phasegate/X` is include/, goldens/include/ or compare/include/,
     and `include/phasegate/runner/X` is runner/X;
   - a runner room (cli/, report/, run/, impl/, opdir/, tensors/, base/, serve/),
     only for .c/.h files: relative to runner/ (`impl/pool.c` is
     runner/impl/pool.c);
   - phasegate/ (an include path, .h): include/, goldens/include/ or compare/include/;
   - a folder next to the citing file (tests/python_golden citing `data/pro/…`):
     relative to the citing file's directory.
   `{a,b}` is expanded (`golden_cache.{c,h}`) and a glob (`runner/opdir/contract_*.c`)
   must match at least one file. Not citations: tokens with a placeholder (`<op>`,
   `$OUT`, `${VAR}`, an all-capitals component such as `NAME.yaml` or `DIR/…`), build
   outputs (.so, .o, .a), URLs, and paths in a user's project or a build tree
   (`custom/<op>/eval/…`, `build/…`, `phasegate-reports/…`): their first component is
   none of the above.
2. In the sources (runner/, goldens/, compare/, include/), a bare `name.c` (a file map
   in a comment, "see plan.c") is the name of a tracked file.
3. A relative link of a Markdown file, `[text](target)`, resolves to a file or folder
   from the Markdown file's directory.
4. A section cited as `docs/design.md §N` (also `§N "Name"`, `§N rule R`, `§N–§M`, a
   citation spread over two comment lines) exists: docs/design.md has a heading
   `## N. …`, and for a quoted name a heading holding it in that section. Likewise
   `docs/<file>.md "Name"`: a heading, or a paragraph's bold lead (`**Name.**`), of that
   file holds the name (backquotes ignored, case ignored).
5. No tracked file at all (binary, fuzz corpus and the skipped files included) names
   the team's notes that live outside the repository (the names are spelled in pieces
   below, so that this file does not name them itself).

Skipped by 1-4: tests/fuzz-corpus/ (mutated inputs, not prose), binary files, the data
files that carry no prose (.npy, .safetensors, .expected, images) and a file holding
the line `phasegate-cited-files: ignore` (none today).

    python3 cited_files.py SOURCE_DIR     exit 0 when nothing is found, 1 with one line
                                          "file:line: …" per finding
"""
import bisect
import fnmatch
import os
import re
import subprocess
import sys

TOP = {"docs", "runner", "tools", "tests", "cmake", "include", "suites", "goldens",
       "compare", ".ci"}
ROOMS = {"cli", "report", "run", "impl", "opdir", "tensors", "base", "serve"}
INCLUDE_DIRS = ["include", "goldens/include", "compare/include"]
BUILT = {"so", "o", "a", "dylib", "dll", "exe"}          # build outputs, never tracked
PLACEHOLDER = re.compile(r"(?!README|LICENSE|CHANGELOG)[A-Z][A-Z0-9_]+")  # NAME.yaml, DIR/…
SOURCE_DIRS = ("runner/", "goldens/", "compare/", "include/")
SKIP_PREFIXES = ("tests/fuzz-corpus/",)
SKIP_SUFFIXES = (".npy", ".safetensors", ".expected", ".png", ".svg", ".jpg", ".gz")
OUTSIDE = ["DESIGN" + ".md", "STYLE" + ".md", "DEVELOPERS" + ".md", "../" + "shared"]

# A path token: components of name characters joined by '/', the last one with an
# extension; not preceded by a character that would make it the tail of a longer path
# (or of a placeholder), not followed by more path.
NAME = r"[A-Za-z0-9_.*{},\-]+"
TOKEN = re.compile(r"(?<![\w./<>${}~@%\-])((?:" + NAME + r"/)+" + NAME + r")(?![\w/<>$\-])")
EXT = re.compile(r"\.([A-Za-z][A-Za-z0-9]*)$")
BARE_C = re.compile(r"(?<![\w./<>${}~@%\-])([a-z][a-z0-9_]*\.c)(?![\w/<>$\-])")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
DESIGN_CITE = re.compile(r"docs/design\.md((?:[ ,;]*(?:and )?§\d+(?:[–-]§?\d+)?"
                         r"(?: rules? [\d–\-, ]+)?(?:,? *\"[^\"]+\")*)*)")
SECTION = re.compile(r"§(\d+)((?:[–-]§?\d+)?)((?: rules? [\d–\-, ]+)?)((?:,? *\"[^\"]+\")*)")
DOC_QUOTE = re.compile(r"(?<![\w/])(docs/[a-z_]+\.md|[a-z_]+\.md)\)? \"([^\"]+)\"")


def tracked(root):
    if os.path.exists(os.path.join(root, ".git")):
        try:
            out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                                 check=True).stdout.decode()
            return [f for f in out.split("\0") if f]
        except (OSError, subprocess.CalledProcessError):
            pass  # no git here: walk the tree
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".git" and not x.startswith("build")]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(files)


def read_text(path):
    try:
        data = open(path, "rb").read()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def expand(token):
    """`a/b.{c,h}` -> ['a/b.c', 'a/b.h'] (one brace group at a time)."""
    m = re.search(r"\{([^{}]*)\}", token)
    if not m:
        return [token]
    out = []
    for alt in m.group(1).split(","):
        out += expand(token[:m.start()] + alt + token[m.end():])
    return out


class Tree:
    def __init__(self, root, files):
        self.root = root
        self.files = set(files)
        self.dirs = set()
        for f in files:
            parts = f.split("/")
            for i in range(1, len(parts)):
                self.dirs.add("/".join(parts[:i]))

    def exists(self, rel):
        rel = os.path.normpath(rel)
        if rel.startswith(".."):
            return False
        if any(c in rel for c in "*?["):
            return any(fnmatch.fnmatchcase(f, rel) for f in self.files)
        return rel in self.files or rel in self.dirs or os.path.exists(os.path.join(self.root, rel))


def candidates(tree, citing, token):
    """The places a token may name, or None when it is not a citation of this repo."""
    parts = token.split("/")
    first = parts[0]
    ext = EXT.search(token)
    here = os.path.dirname(citing)
    stems = [p.split(".")[0] for p in parts]
    if ext and ext.group(1) in BUILT or any(PLACEHOLDER.fullmatch(x) for x in stems):
        return None
    if token.startswith("include/phasegate/runner/"):   # the installed layout
        return ["runner/" + token[len("include/phasegate/runner/"):]]
    if token.startswith("include/phasegate/"):
        return [d + token[len("include"):] for d in INCLUDE_DIRS]
    if first in TOP:
        return [token]
    if first in ROOMS and ext and ext.group(1) in ("c", "h"):
        return ["runner/" + token]
    if first == "phasegate" and ext and ext.group(1) == "h":
        return [d + "/" + token for d in INCLUDE_DIRS]
    if first not in ("", ".", "..") and os.path.normpath(os.path.join(here, first)) in tree.dirs:
        return [os.path.join(here, token)]
    return None


def check_paths(tree, f, lines, bad):
    for n, line in enumerate(lines, 1):
        if "://" in line:
            line = re.sub(r"\w+://\S+", " ", line)
        for m in TOKEN.finditer(line):
            token = m.group(1).rstrip(".,")
            if not EXT.search(token) or "//" in token:
                continue
            for one in expand(token):
                places = candidates(tree, f, one)
                if places is not None and not any(tree.exists(p) for p in places):
                    bad.append(f"{f}:{n}: cites {one}, which is not in the repo")


def check_bare_sources(tree, f, lines, bad, basenames):
    """In the sources, a bare `name.c` (a file map in a comment, `see plan.c`) is the name
    of a tracked file."""
    for n, line in enumerate(lines, 1):
        for m in BARE_C.finditer(line):
            if m.group(1) not in basenames:
                bad.append(f"{f}:{n}: names {m.group(1)}, which is not in the repo")


def check_md_links(tree, f, lines, bad):
    here = os.path.dirname(f)
    for n, line in enumerate(lines, 1):
        for m in MD_LINK.finditer(line):
            target = m.group(1).split("#")[0]
            if not target or ":" in target or target.startswith(("<", "$")):
                continue
            if not tree.exists(os.path.join(here, target)):
                bad.append(f"{f}:{n}: links {target}, which is not in the repo")


def headings(tree, doc):
    text = read_text(os.path.join(tree.root, doc)) or ""
    # Headings, and the bold lead of a paragraph (`**The progress line.** …`).
    heads = re.findall(r"^#+ +(.*)$", text, re.M) + re.findall(r"^\*\*([^*]+)\*\*", text, re.M)
    return [h.replace("`", "") for h in heads]


def design_sections(tree):
    """{N: [the headings of section N, its own first]} of docs/design.md."""
    sections, cur = {}, None
    for h in headings(tree, "docs/design.md"):
        m = re.match(r"(\d+)\. ", h)
        if m:
            cur = int(m.group(1))
            sections[cur] = []
        if cur is not None:
            sections[cur].append(h)
    return sections


def join_lines(lines):
    """The text with each line's comment leader dropped and lines joined by a blank (a
    citation spread over two comment lines reads as one), and where each line starts."""
    parts, starts, pos = [], [], 0
    for i, line in enumerate(lines):
        piece = line if i == 0 else " " + re.sub(r"^[ \t]*(?:[*#]+|//|--)?[ \t]*", "", line)
        starts.append(pos)
        parts.append(piece)
        pos += len(piece)
    return "".join(parts), starts


def check_sections(tree, f, lines, bad, sections, doc_heads):
    text, starts = join_lines(lines)
    for m in DESIGN_CITE.finditer(text):
        n = bisect.bisect_right(starts, m.start())
        for s in SECTION.finditer(m.group(1)):
            first = int(s.group(1))
            last = int(re.sub(r"\D", "", s.group(2)) or first)
            for k in range(first, last + 1):
                if k not in sections:
                    bad.append(f"{f}:{n}: cites docs/design.md §{k}, which has no such section")
            for name in re.findall(r"\"([^\"]+)\"", s.group(4)):
                name = re.sub(r"\s+", " ", name)
                if not any(name.lower() in h.lower() for h in sections.get(first, [])):
                    bad.append(f"{f}:{n}: cites docs/design.md §{first} \"{name}\", "
                               f"which is not a heading of that section")
    here = os.path.dirname(f)
    for m in DOC_QUOTE.finditer(text):
        doc = m.group(1)
        doc = doc if doc.startswith("docs/") else os.path.normpath(os.path.join(here, doc))
        if doc == "docs/design.md" or not doc.startswith("docs/") or not tree.exists(doc):
            continue
        name = re.sub(r"\s+", " ", m.group(2)).replace("`", "")
        if doc not in doc_heads:
            doc_heads[doc] = headings(tree, doc)
        if not any(name.lower() in h.lower() for h in doc_heads[doc]):
            n = bisect.bisect_right(starts, m.start())
            bad.append(f"{f}:{n}: cites {doc} \"{name}\", which is not a heading there")


def outside(root, f, bad):
    try:
        data = open(os.path.join(root, f), "rb").read()
    except OSError:
        return
    for word in OUTSIDE:
        at = data.find(word.encode())
        while at >= 0:
            n = data.count(b"\n", 0, at) + 1
            bad.append(f"{f}:{n}: names {word}, a file outside the project")
            at = data.find(word.encode(), at + 1)


def main(root):
    root = os.path.abspath(root)
    files = tracked(root)
    tree = Tree(root, files)
    sections = design_sections(tree)
    bad, doc_heads = [], {}
    basenames = {os.path.basename(f) for f in files}
    me = os.path.relpath(os.path.abspath(__file__), root)
    for f in files:
        outside(root, f, bad)  # every file, the skipped ones and binary ones too
        if f == me or f.startswith(SKIP_PREFIXES) or f.endswith(SKIP_SUFFIXES):
            continue
        text = read_text(os.path.join(root, f))
        if text is None or "phasegate-cited-files: ignore" in text:
            continue
        lines = text.split("\n")
        check_paths(tree, f, lines, bad)
        if f.startswith(SOURCE_DIRS) and f.endswith((".c", ".h")):
            check_bare_sources(tree, f, lines, bad, basenames)
        if f.endswith(".md"):
            check_md_links(tree, f, lines, bad)
        check_sections(tree, f, lines, bad, sections, doc_heads)
    for b in bad:
        print(b)
    print(f"cited_files: {len(files)} files, {len(bad)} finding(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
