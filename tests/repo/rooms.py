"""The runner's room rules (docs/architecture.md): no call circle between the C files of a
room (or of goldens/, compare/), no include from a room to a room above
it, no pg__ (room-internal) name used in two rooms, nothing below the runner including
runner/, include/phasegate/ declaring only types and inline helpers, no source file over 800
lines and no function over 120 lines in runner/, goldens/,
compare/ (tables are data, not functions), and every .c of runner/, goldens/ and
compare/ listed in its CMakeLists; no header declaring a function or global that no
other file uses (it belongs static in its file).

    python3 rooms.py SOURCE_DIR        exit 0 when every rule holds, 1 with the findings
"""
import glob
import os
import re
import sys

ORDER = ["cli", "fleet", "report", "run", "serve", "impl", "opdir", "tensors", "base"]
MAX_LINES = 800
LONG_OK = set()  # files allowed past MAX_LINES (none today)
MAX_FUNCTION_LINES = 120
NOT_FUNCTIONS = ("struct ", "enum ", "union ", "typedef ", "static const ", "const ", "#")


def functions(path):
    """(first line, length) of every function definition: a declaration that starts in
    column 0 and opens a body, up to the '}' in column 0 that closes it."""
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line[:1].isalpha() and "(" in line and not line.startswith(NOT_FUNCTIONS):
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith(("{", ";")):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                yield i + 1, k - i + 1
                i = k
        i += 1


def strip_c(text):
    """C text without comments and string contents, line numbers kept."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


DEFINITION = re.compile(r"^(?!static)[A-Za-z_][^;{}()=]*?\b(pg_\w+)\s*\([^;{}]*\)\s*\{", re.M)
TABLE = re.compile(r"^(?!static|extern)(?:const\s+)?struct\s+\w+\s+(pg_\w+)\s*(?:\[[^\]]*\])?\s*=", re.M)


def call_circles(folder):
    """Circles between the C files of one room or component: file A uses a function (or
    an ops table) defined in file B and B, directly or not, uses one of A's. Such a
    file is both an entry point and a helper of its own callees; the shared steps
    belong in a file below both (docs/architecture.md). Returns one finding per circle."""
    files = sorted(glob.glob(folder + "/*.c"))
    defined, used = {}, {}
    for f in files:
        text = strip_c(open(f).read())
        for m in list(DEFINITION.finditer(text)) + list(TABLE.finditer(text)):
            defined[m.group(1)] = f
        used[f] = set(re.findall(r"\bpg_\w+", text))
        # a table of rows X(name) expanded into pg__##name##_ops names: the real uses
        for suffix in re.findall(r"pg__##\w+##(_\w+)", text):
            used[f] |= {f"pg__{row}{suffix}" for row in re.findall(r"^\s*X\((\w+)\)", text, re.M)}
    edges = {f: sorted({defined[n] for n in used[f] if defined.get(n, f) != f}) for f in files}
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                circles.append(sorted(scc))

    for f in files:
        if f not in index:
            visit(f)
    out = []
    for scc in circles:
        why = []
        for a in scc:
            for b in edges[a]:
                if b in scc:
                    names = sorted(n for n in used[a] if defined.get(n) == b)
                    why.append(f"{os.path.basename(a)} -> {os.path.basename(b)} ({', '.join(names[:3])})")
        out.append(f"{folder}/: a call circle between {', '.join(scc)}: {'; '.join(why)}")
    return out


HEADERS = ("runner/*/*.h", "goldens/*.h", "goldens/include/phasegate/*.h", "compare/*.h",
           "compare/include/phasegate/*.h")
DECLARATION = re.compile(r"^(?!typedef|static)[^#/ *\n{};][^\n{};=]*?\b(pg_\w+)\s*\([^;{}]*;", re.M)
GLOBAL = re.compile(r"^extern\b[^;(\n]*?\b(pg_\w+)\s*(?:\[[^\]]*\])?\s*;", re.M)
GLOBAL_DEFINITION = re.compile(r"^(?!static|extern)[A-Za-z_][^;(){}=\n]*?\b(pg_\w+)\s*"
                               r"(?:\[[^\]]*\])?\s*=", re.M)


def header_findings():
    """Headers declare only what other files use: a function or global declared in a
    header of runner/, goldens/ or compare/ and used by no C file (of those, tests/ or
    tools/) other than the one defining it is static in that file, or gone. A header's
    macro or inline body counts as a user (its expansions are in other files)."""
    sources = [f for d in ("runner", "goldens", "compare", "tests", "tools")
               for f in glob.glob(d + "/**/*.[ch]", recursive=True)]
    headers = {h for p in HEADERS for h in glob.glob(p)}
    declared, definer, users = [], {}, {}
    for f in sorted(set(sources)):
        text = strip_c(open(f).read())
        if f in headers:
            for m in list(DECLARATION.finditer(text)) + list(GLOBAL.finditer(text)):
                declared.append((f, text.count("\n", 0, m.start()) + 1, m.group(1)))
            # what is left once the declarations are gone: macros and inline bodies
            text = GLOBAL.sub("", DECLARATION.sub("", text))
        for m in [*DEFINITION.finditer(text), *TABLE.finditer(text),
                  *GLOBAL_DEFINITION.finditer(text)]:
            definer.setdefault(m.group(1), set()).add(f)
        for n in set(re.findall(r"\bpg_\w+", text)):
            users.setdefault(n, set()).add(f)
    bad = []
    for f, line, name in declared:
        defs = definer.get(name, set())
        if not users.get(name, set()) - defs:
            bad.append(f"{f}:{line}: declares {name}, which no other file uses")
    return bad


IMPL_PREFIX = re.compile(r"\bstrn?cmp\s*\([^;]*\"(?:plugin|exec|worker|python|replay):\"")


def one_place_findings():
    """Decisions made in one place: only impl/adapter.c reads an --impl prefix (everything
    else gets the kind as the ops-table row or a process program); cJSON is called by its
    own names (no #define renaming it); a test in tests/<folder>/ is named <folder>/<name>
    (literal add_test names; pg_add_unit_test derives its name from the folder)."""
    out = []
    for f in sorted(glob.glob("runner/*/*.c")):
        if f == "runner/impl/adapter.c":
            continue
        raw = open(f).read()
        text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), raw, flags=re.S)
        for m in IMPL_PREFIX.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append(f"{f}:{line}: compares an --impl prefix (only impl/adapter.c does)")
    for f in sorted(glob.glob("runner/*/*.[ch]")):
        for m in re.finditer(r"^\s*#\s*define\s+(cJSON_\w+)", open(f).read(), re.M):
            out.append(f"{f}: #define {m.group(1)}: call cJSON by its own names")
    for f in sorted(glob.glob("tests/**/CMakeLists.txt", recursive=True)):
        folder = os.path.dirname(f)[len("tests/"):]
        for m in re.finditer(r'add_test\(NAME\s+"?([^\s")$]+)', open(f).read()):
            if not m.group(1).startswith(folder + "/"):
                out.append(f"{f}: test {m.group(1)} is not named {folder}/<name>")
    return out


def main(root):
    os.chdir(root)
    rank = {r: i for i, r in enumerate(ORDER)}
    bad, names = [], {}
    for f in sorted(glob.glob("runner/*/*.[ch]")):
        room = f.split("/")[1]
        text = open(f).read()
        for inc, header in re.findall(r'#include "([a-z_]+)/([a-z_]+)\.h"', text):
            if inc in rank and rank[inc] < rank[room]:
                bad.append(f"{f}: includes {inc}/ (a room above {room}/)")
            elif inc in rank and inc != room and header != inc:
                bad.append(f"{f}: includes {inc}/{header}.h, a side door: another room is "
                           f"reached through its one header, {inc}/{inc}.h")
        for n in set(re.findall(r"\bpg__[a-z0-9_]+", text)):
            names.setdefault(n, set()).add(room)
    seen = {}
    for f in sorted(glob.glob("runner/*/*.[ch]")):
        seen.setdefault(os.path.basename(f), []).append(f)
    for base, paths in sorted(seen.items()):
        if len(paths) > 1:
            bad.append(f"{base}: one file name in several rooms ({', '.join(paths)})")
    for n, rooms in sorted(names.items()):
        if len(rooms) > 1:
            bad.append(f"{n}: a pg__ name used in rooms {sorted(rooms)}")
    for f in glob.glob("goldens/**/*.[ch]", recursive=True) + glob.glob("compare/*.[ch]"):
        for inc in re.findall(r'#include "([^"]+)"', open(f).read()):
            if inc.split("/")[0] in rank:
                bad.append(f"{f}: below the runner but includes {inc}")
    for f in glob.glob("runner/*/*.[ch]") + glob.glob("goldens/*.[ch]") + glob.glob("compare/*.[ch]"):
        n = sum(1 for _ in open(f))
        if n > MAX_LINES and f not in LONG_OK:
            bad.append(f"{f}: {n} lines (at most {MAX_LINES})")
        for first, n in functions(f):
            if n > MAX_FUNCTION_LINES:
                bad.append(f"{f}:{first}: a function of {n} lines (at most {MAX_FUNCTION_LINES})")
    for comp, pattern in (("runner", "runner/*/*.c"), ("goldens", "goldens/*.c"),
                          ("compare", "compare/*.c")):
        listed = open(f"{comp}/CMakeLists.txt").read()
        for f in glob.glob(pattern):
            if not re.search(r"(^|[\s(])" + re.escape(f[len(comp) + 1:]) + r"([\s)]|$)", listed):
                bad.append(f"{f}: not listed in {comp}/CMakeLists.txt")
    # include/phasegate/ is the ABI: types and inline helpers, no library's functions.
    for f in glob.glob("include/phasegate/*.h"):
        text = open(f).read()
        for m in re.finditer(r"^(?!static|typedef|#|\s|/|\*|struct|enum|union|extern)"
                             r"[A-Za-z_][^;{}]*\([^;{}]*\);", text, re.M):
            line = text.count("\n", 0, m.start()) + 1
            bad.append(f"{f}:{line}: declares a function implemented elsewhere (the ABI is header-only)")
    for folder in sorted(glob.glob("runner/*/")) + ["goldens/", "compare/"]:
        bad += call_circles(folder.rstrip("/"))
    bad += one_place_findings()
    bad += cmake_findings()
    bad += header_findings()
    for b in bad:
        print(b)
    print(f"rooms: {len(bad)} finding(s)")
    return 1 if bad else 0


def cmake_findings():
    """cmake/*.cmake (docs/cmake.md): every function and macro at most MAX_FUNCTION_LINES
    lines, from its function(/macro( line to its endfunction()/endmacro(); no function or
    macro defined twice across the files, by name or as the same body (of 4 lines or
    more, comments and indentation aside) under another name: a helper is shared, not
    copied."""
    bad, where, bodies = [], {}, {}
    for f in sorted(glob.glob("cmake/*.cmake")):
        start = None
        for no, line in enumerate(open(f).read().split("\n"), 1):
            m = re.match(r"\s*(function|macro)\s*\(\s*([A-Za-z0-9_]+)", line, re.I)
            if m and start is None:
                start, kind, name, body = no, m.group(1).lower(), m.group(2), []
                where.setdefault(name.lower(), []).append(f"{f}:{no}")
            elif start is not None and re.match(r"\s*end" + kind + r"\s*\(", line, re.I):
                if no - start + 1 > MAX_FUNCTION_LINES:
                    bad.append(f"{f}:{start}: {kind} {name} of {no - start + 1} lines "
                               f"(at most {MAX_FUNCTION_LINES})")
                if len(body) >= 4:
                    bodies.setdefault("\n".join(body), []).append(f"{name} ({f}:{start})")
                start = None
            elif start is not None and line.strip() and not line.strip().startswith("#"):
                body.append(line.strip())
        if start is not None:
            bad.append(f"{f}:{start}: {kind} {name} has no end{kind}()")
    for name, defs in sorted(where.items()):
        if len(defs) > 1:
            bad.append(f"{name}: defined {len(defs)} times in cmake/ ({', '.join(defs)})")
    for defs in bodies.values():
        if len(defs) > 1:
            bad.append(f"the same body in cmake/: {', '.join(defs)} (share one helper)")
    return bad

if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
