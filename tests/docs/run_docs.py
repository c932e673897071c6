#!/usr/bin/env python3
"""docs/<name>: run every fenced command block of a document, in document order, as one
shell session in a scratch directory, and write every file the document has the reader
write (docs/testing.md, "Runnable documentation").

usage: run_docs.py --source SRC --build BUILD --work DIR [--python PY] DOC
       run_docs.py --source SRC --check DOC...     # parse and check only, run nothing

Fence languages: `sh`, `bash`, `shell` and `console` are commands (in `console` only the
lines starting with `$ `); every other language is not; a fence without a language is an
error, and so is an indented code block (a command there would hide from this test).
Markers, HTML comments on the lines just above a fence:
  <!-- phasegate-docs: skip REASON -->   a command block not run here (REASON required)
  <!-- phasegate-docs: exit N -->        each command of the block must exit N (default 0)
  <!-- phasegate-docs: ci -->            the README's install-and-test-everything block:
                                         two commands, the first builds verify_all, the
                                         second is in .ci/run verbatim; not run here
  <!-- phasegate-docs: file PATH -->     a non-command block: write it to PATH (relative
  <!-- phasegate-docs: append PATH -->   to the scratch root), or append it, at that point
and, anywhere in the document:
  <!-- phasegate-docs: build-dir DIR --> DIR (e.g. build/release) names the build tree
                                         under test in the scratch checkout
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

COMMAND_LANGS = {"sh", "bash", "shell", "console"}
MARKER = re.compile(r"^\s*<!--\s*phasegate-docs:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)[^`]*$")
ELIDED = re.compile(r"…|\.\.\.")


class DocError(Exception):
    pass


class Block:
    def __init__(self, doc, line, lang, text, markers):
        self.doc, self.line, self.lang, self.text = doc, line, lang, text
        self.markers = markers          # [(line, word, arg)]
        self.is_command = lang in COMMAND_LANGS

    def where(self, line=None):
        return "%s:%d" % (self.doc, line if line is not None else self.line)


def parse(path, name):
    """Blocks of the document and its document-level markers; DocError on a bad form."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, doc_markers, pending, errors = [], [], [], []
    i, prev_blank = 0, True
    while i < len(lines):
        line, n = lines[i], i + 1
        m = MARKER.match(line)
        if m:
            word, _, arg = m.group(1).partition(" ")
            if word == "build-dir":
                doc_markers.append((n, word, arg.strip()))
            else:
                pending.append((n, word, arg.strip()))
            i += 1
            continue
        f = FENCE.match(line)
        if f:
            indent, fence, lang = len(f.group(1)), f.group(2), f.group(3).lower()
            body, j = [], i + 1
            while j < len(lines):
                c = lines[j].strip()
                if c.startswith(fence[0] * len(fence)) and set(c) <= {fence[0]}:
                    break
                body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
                j += 1
            if j == len(lines):
                errors.append("%s:%d: fence never closed" % (name, n))
            if not lang:
                errors.append("%s:%d: fenced block without a language (sh/bash/console for "
                              "commands, text for output, yaml, json, c, cmake, python, …)"
                              % (name, n))
            blocks.append(Block(name, n, lang, "\n".join(body) + "\n", pending))
            pending, i, prev_blank = [], j + 1, False
            continue
        if line.strip() == "":
            prev_blank = True
            i += 1
            continue
        if pending:
            errors.append("%s:%d: phasegate-docs marker not followed by a fenced block"
                          % (name, pending[0][0]))
            pending = []
        if prev_blank and (line.startswith("    ") or line.startswith("\t")):
            errors.append("%s:%d: indented code block: put commands in a ```sh fence and "
                          "anything else in a fence of its own language (```text)" % (name, n))
            while i < len(lines) and (lines[i].strip() == "" or lines[i][:4] == "    "
                                      or lines[i][:1] == "\t"):
                i += 1
            prev_blank = True
            continue
        prev_blank = False
        i += 1
    if pending:
        errors.append("%s:%d: phasegate-docs marker not followed by a fenced block"
                      % (name, pending[0][0]))
    for b in blocks:
        errors.extend(check_markers(b))
    if errors:
        raise DocError("\n".join(errors))
    return blocks, doc_markers


def check_markers(b):
    errs, words = [], [w for _, w, _ in b.markers]
    for ln, word, arg in b.markers:
        where = b.where(ln)
        if word in ("skip", "exit", "ci") and not b.is_command:
            errs.append("%s: '%s' marks a command block, this one is ```%s" % (where, word, b.lang))
        elif word in ("file", "append") and b.is_command:
            errs.append("%s: '%s' marks a file's contents, not a command block" % (where, word))
        elif word == "skip" and not arg:
            errs.append("%s: skip needs a reason" % where)
        elif word == "exit" and not re.fullmatch(r"\d+", arg):
            errs.append("%s: exit needs a number, not '%s'" % (where, arg))
        elif word in ("file", "append") and (not arg or arg.startswith("/") or ".." in arg.split("/")):
            errs.append("%s: %s needs a relative path inside the scratch root, not '%s'"
                        % (where, word, arg))
        elif word not in ("skip", "exit", "ci", "file", "append"):
            errs.append("%s: unknown phasegate-docs marker '%s'" % (where, word))
    if len(words) != len(set(words)) or len({"skip", "ci", "exit"} & set(words)) > 1:
        errs.append("%s: conflicting or repeated markers %s" % (b.where(), words))
    return errs


def commands(b):
    """(line, command) pairs of a command block; continuation lines joined."""
    out, cur, start = [], [], 0
    for k, raw in enumerate(b.text.split("\n")):
        ln = b.line + 1 + k
        if not cur:
            if b.lang == "console":
                if not raw.startswith("$ "):
                    continue
                raw = raw[2:]
            if raw.strip() == "" or raw.lstrip().startswith("#"):
                continue
            start = ln
        cur.append(raw)
        if not raw.rstrip().endswith("\\"):
            out.append((start, "\n".join(cur)))
            cur = []
    if cur:
        out.append((start, "\n".join(cur)))
    return out


def marker(b, word):
    for _, w, arg in b.markers:
        if w == word:
            return arg
    return None


def check_ci_block(b, source):
    """The README's first commands install packages and test everything: CI runs them
    (.ci/run), this test only checks their text."""
    cmds = [c for _, c in commands(b)]
    if len(cmds) != 2:
        return ["%s: the ci block must hold exactly two commands, it has %d" % (b.where(), len(cmds))]
    errs = []
    if "--target verify_all" not in cmds[0]:
        errs.append("%s: the first ci command does not build verify_all: %s" % (b.where(), cmds[0]))
    try:
        with open(os.path.join(source, ".ci", "run"), encoding="utf-8") as f:
            ci_lines = f.read().split("\n")
    except OSError as e:
        return ["%s: .ci/run: %s" % (b.where(), e)]
    if cmds[1] not in ci_lines:
        errs.append("%s: .ci/run does not run the second ci command verbatim: %s"
                    % (b.where(), cmds[1]))
    return errs


def plan(blocks, source):
    """The steps to run, in document order; a DocError lists every block that is neither
    runnable nor marked."""
    steps, errs = [], []
    for b in blocks:
        if b.is_command:
            if marker(b, "ci") is not None:
                errs.extend(check_ci_block(b, source))
                continue
            if marker(b, "skip") is not None:
                continue
            want = int(marker(b, "exit") or 0)
            cmds = commands(b)
            if not cmds:
                errs.append("%s: command block without a command" % b.where())
            for ln, c in cmds:
                if ELIDED.search(c):
                    errs.append("%s: command with elided arguments ('…'/'...'): write it out "
                                "in full or mark the block '<!-- phasegate-docs: skip REASON -->': %s"
                                % (b.where(ln), c))
                steps.append(("run", b.where(ln), c, want))
        else:
            for word in ("file", "append"):
                path = marker(b, word)
                if path is not None:
                    steps.append((word, b.where(), path, b.text))
    if errs:
        raise DocError("\n".join(errs))
    return steps


def scratch_checkout(source, build, work, build_dir):
    """work/ mirrors a checkout: a link per top-level entry of the source, and the
    document's build directory linked to the build tree under test."""
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(os.path.join(work, "home"))
    for e in sorted(os.listdir(source)):
        if e == ".git" or e == "build" or e.startswith("build-"):
            continue
        os.symlink(os.path.join(source, e), os.path.join(work, e))
    if build_dir:
        parts = [p for p in build_dir.strip("/").split("/") if p]
        if not parts or ".." in parts or build_dir.startswith("/"):
            raise DocError("build-dir must be a relative path: '%s'" % build_dir)
        parent = os.path.join(work, *parts[:-1])
        if os.path.islink(os.path.join(work, parts[0])):
            raise DocError("build-dir '%s' hides the source entry '%s'" % (build_dir, parts[0]))
        os.makedirs(parent, exist_ok=True)
        os.symlink(os.path.abspath(build), os.path.join(parent, parts[-1]))


def write_script(steps, work):
    """One bash session: files written and commands run in order; each command's exit
    status checked; `cd` and `export` carry over as in a terminal."""
    data = os.path.join(work, ".pgdocs")
    os.makedirs(data)
    out = ["root=%s" % sh_quote(work), 'cd "$root"']
    for k, (kind, where, a, b) in enumerate(steps):
        if kind in ("file", "append"):
            src = os.path.join(data, "block%d" % k)
            with open(src, "w", encoding="utf-8") as f:
                f.write(b)
            dst = '"$root"/' + sh_quote(a)
            out.append("echo %s" % sh_quote("### %s: %s %s" % (where, "write" if kind == "file"
                                                                 else "append to", a)))
            out.append('mkdir -p "$(dirname %s)" && cat %s %s %s' % (dst, sh_quote(src),
                                                                     ">" if kind == "file" else ">>", dst))
        else:
            out.append("echo %s" % sh_quote("### %s: (expect exit %d)" % (where, b)))
            out.append("printf '%%s\\n' %s" % sh_quote("$ " + a))
            out.append("{\n%s\n} </dev/null 2>&1" % a)
            out.append("pgdocs_rc=$?")
            out.append('if [ "$pgdocs_rc" -ne %d ]; then echo %s "$pgdocs_rc"; exit 1; fi'
                       % (b, sh_quote("FAILED %s: expected exit %d, got" % (where, b))))
    out.append("echo '### every command ran as documented'")
    path = os.path.join(data, "session.sh")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    return path


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build")
    ap.add_argument("--work")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("docs", nargs="+")
    a = ap.parse_args()
    a.source = os.path.abspath(a.source)
    try:
        parsed = []
        for d in a.docs:
            blocks, dm = parse(os.path.join(a.source, d), d)
            parsed.append((d, blocks, dm, plan(blocks, a.source)))
    except DocError as e:
        print(e, file=sys.stderr)
        return 1
    if a.check:
        for d, blocks, _, steps in parsed:
            n = sum(1 for s in steps if s[0] == "run")
            print("%s: %d blocks, %d commands to run, %d files" % (d, len(blocks), n, len(steps) - n))
        return 0
    if len(parsed) != 1 or not a.build or not a.work:
        print("run_docs.py: one DOC, --build and --work to run", file=sys.stderr)
        return 2
    d, blocks, dm, steps = parsed[0]
    if len(dm) > 1:
        print("%s: more than one build-dir marker" % d, file=sys.stderr)
        return 1
    try:
        scratch_checkout(a.source, a.build, a.work, dm[0][2] if dm else None)
    except DocError as e:
        print("%s: %s" % (d, e), file=sys.stderr)
        return 1
    script = write_script(steps, a.work)
    env = dict(os.environ)
    env["HOME"] = os.path.join(a.work, "home")
    # `python3` in a document is the Python this build was configured with.
    pybin = os.path.join(a.work, ".pgdocs", "bin")
    os.makedirs(pybin)
    os.symlink(a.python, os.path.join(pybin, "python3"))
    env["PATH"] = pybin + os.pathsep + env.get("PATH", "")
    for k in [k for k in env if k.startswith("CTEST_") or k.startswith("PHASEGATE_")]:
        del env[k]   # the session starts as a user's shell would, not as this test
    sys.stdout.flush()
    return subprocess.call(["/bin/bash", "--noprofile", "--norc", script], cwd=a.work, env=env)


if __name__ == "__main__":
    sys.exit(main())
