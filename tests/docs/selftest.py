#!/usr/bin/env python3
"""docs/run_docs_selftest: run_docs.py's convention holds both ways — documents that break
it are refused with the line and the reason, a command that exits otherwise than marked
fails the run, and a good document's files, markers and session behave as documented.
usage: selftest.py RUN_DOCS_PY SCRATCH_DIR"""
import os
import shutil
import subprocess
import sys

RUN_DOCS, SCRATCH = sys.argv[1], os.path.abspath(sys.argv[2])
F = "```"
failures = []


def doc(name, text):
    src = os.path.join(SCRATCH, "src")
    os.makedirs(os.path.join(src, ".ci"), exist_ok=True)
    with open(os.path.join(src, ".ci", "run"), "w") as f:
        f.write("#!/bin/sh\nset -e\necho ci && echo all\n")
    with open(os.path.join(src, name), "w") as f:
        f.write(text)
    return src


def run(name, text, *extra):
    src = doc(name, text)
    build = os.path.join(SCRATCH, "fakebuild")
    os.makedirs(build, exist_ok=True)
    with open(os.path.join(build, "BUILT"), "w") as f:
        f.write("yes\n")
    args = [sys.executable, RUN_DOCS, "--source", src] + list(extra)
    if not extra:
        args += ["--build", build, "--work", os.path.join(SCRATCH, "work-" + name[:-3])]
    p = subprocess.run(args + [name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    return p.returncode, p.stdout


def expect_refused(name, text, *needles):
    rc, out = run(name, text, "--check")
    if rc == 0 or not all(n in out for n in needles):
        failures.append("%s: want a refusal naming %s, got rc %d:\n%s" % (name, needles, rc, out))


shutil.rmtree(SCRATCH, ignore_errors=True)
os.makedirs(SCRATCH)

expect_refused("nolang.md", "x\n\n%s\nls\n%s\n" % (F, F), "nolang.md:3:", "without a language")
expect_refused("indented.md", "x\n\n    phasegate run --op-dir d\n", "indented.md:3:",
               "indented code block")
expect_refused("elided.md", "%ssh\nphasegate run --op-dir … --case x\n%s\n" % (F, F),
               "elided.md:2:", "elided")
expect_refused("dangling.md", "<!-- phasegate-docs: exit 1 -->\ntext\n%ssh\ntrue\n%s\n" % (F, F),
               "dangling.md:1:", "not followed by a fenced block")
expect_refused("unknown.md", "<!-- phasegate-docs: maybe -->\n%ssh\ntrue\n%s\n" % (F, F),
               "unknown phasegate-docs marker 'maybe'")
expect_refused("noreason.md", "<!-- phasegate-docs: skip -->\n%ssh\ntrue\n%s\n" % (F, F),
               "skip needs a reason")
expect_refused("filecmd.md", "<!-- phasegate-docs: file a.txt -->\n%ssh\ntrue\n%s\n" % (F, F),
               "not a command block")
expect_refused("escape.md", "<!-- phasegate-docs: file ../a.txt -->\n%stext\nx\n%s\n" % (F, F),
               "relative path inside the scratch root")
expect_refused("ci.md", "<!-- phasegate-docs: ci -->\n%ssh\nmake\necho ci && echo other\n%s\n"
               % (F, F), "does not build verify_all", "does not run the second ci command verbatim")
expect_refused("empty.md", "%ssh\n# only a comment\n%s\n" % (F, F), "without a command")

rc, out = run("exitcode.md", "%ssh\ntrue\nsh -c 'exit 3'\necho never\n%s\n" % (F, F))
if rc == 0 or "FAILED exitcode.md:3: expected exit 0, got 3" not in out or "$ echo never" in out:
    failures.append("exitcode.md: want the run to stop at line 3, got rc %d:\n%s" % (rc, out))

good = """# good
<!-- phasegate-docs: ci -->
{F}sh
cmake --build b --target verify_all
echo ci && echo all
{F}

<!-- phasegate-docs: build-dir build/rel -->
<!-- phasegate-docs: file d/a.txt -->

{F}text
hello
{F}

<!-- phasegate-docs: append d/a.txt -->
{F}text
world
{F}

{F}sh
cd d && export GREETING=hi   # carries over
test "$(cat a.txt | tr '\\n' ' ')" = "hello world " && test "$GREETING" = hi
test -f ../build/rel/BUILT && test "$HOME" = "$(cd ../home && pwd)"
python3 -c 'import sys' && \\
    echo continued
{F}

<!-- phasegate-docs: exit 3 -->
{F}sh
sh -c 'exit 3'
{F}

<!-- phasegate-docs: skip (needs the reader's own device) -->
{F}bash
false
{F}

{F}console
$ test -f a.txt
output lines are not run
{F}
""".format(F=F)
rc, out = run("good.md", good)
if rc != 0 or "every command ran as documented" not in out or "continued" not in out:
    failures.append("good.md: want a clean run, got rc %d:\n%s" % (rc, out))

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print("docs/run_docs_selftest: ok")
