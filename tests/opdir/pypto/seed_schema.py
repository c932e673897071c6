# phasegate — checks an evaluation_report.json against the seed runner's schema
# (docs/design.md §8): every key the seed's report has, with the seed's type. A small
# JSON-schema-like checker (no jsonschema dependency: Debian's /usr/bin/python3 has none).
#
#   seed_schema.py REPORT [--status S] [--category C] [--k K] [--earliest J|null]
#                         [--tolerance ATOL,RTOL]
#
# --status/--category/--k/--earliest also assert the verdict the report must carry;
# --tolerance asserts the atol/rtol of every value-checked per_tensor entry (phasegate's
# extension: the tolerance used is in the report). Exit 0 when everything holds, 1
# otherwise, printing each violation as a JSON path.
import json
import sys

VERDICT = ("PASS", "FAIL", "ERROR")
MODE_VERDICT = ("PASS", "FAIL", "ERROR", "SKIPPED")
CATEGORY = ("precision", "structural", "runtime", "infra", "other")

# Schema nodes: "str", "int", "bool", "number", "null", ("enum", values...),
# ("list", item), ("dict", value) (any keys), ("object", {key: node}) (keys required,
# others allowed: phasegate's extensions), ("any_of", node...).
CHECK = ("object", {
    "id": "str",
    "level": "int",
    "precision_checked": "bool",
    "all_close": "bool",
    "max_abs_diff": ("any_of", "number", "null"),
    "max_rel_diff": ("any_of", "number", "null"),
    "per_mode_status": ("dict", ("enum",) + MODE_VERDICT),
    "per_tensor": ("list", ("object", {})),  # one object per output and mode
})
FIRST_FAILURE = ("object", {
    "case_id": "str",
    "failing_module_boundary": "int",
    "failure_category": ("enum",) + CATEGORY,
    "divergence_fingerprint": "str",
    "summary": "str",
})
REPORT = ("object", {
    "op_name": "str",
    "impl_file": "str",
    "up_to_module": "int",
    "total_modules": "int",
    "status": ("enum",) + VERDICT,
    "checks": ("list", CHECK),
    "cases_total": "int",
    "cases_passed": "int",
    "per_mode_status": ("dict", ("enum",) + MODE_VERDICT),
    "first_failure": ("any_of", "null", FIRST_FAILURE),
    "stdout": "str",
})


def violations(node, v, path):
    """The ways v does not match node, as 'path: reason' strings."""
    if isinstance(node, str):
        ok = {
            "str": isinstance(v, str),
            "int": type(v) is int,  # bool is an int in Python, not in JSON
            "bool": type(v) is bool,
            "number": type(v) in (int, float),
            "null": v is None,
        }[node]
        return [] if ok else [f"{path}: expected {node}, got {json.dumps(v)[:80]}"]
    kind = node[0]
    if kind == "enum":
        return [] if isinstance(v, str) and v in node[1:] else [
            f"{path}: expected one of {'|'.join(node[1:])}, got {json.dumps(v)[:80]}"]
    if kind == "any_of":
        for alt in node[1:]:
            if not violations(alt, v, path):
                return []
        return [f"{path}: matches none of its allowed forms, got {json.dumps(v)[:80]}"]
    if kind == "list":
        if not isinstance(v, list):
            return [f"{path}: expected a list, got {json.dumps(v)[:80]}"]
        return [e for i, x in enumerate(v) for e in violations(node[1], x, f"{path}[{i}]")]
    if kind == "dict":
        if not isinstance(v, dict):
            return [f"{path}: expected an object, got {json.dumps(v)[:80]}"]
        return [e for k, x in v.items() for e in violations(node[1], x, f"{path}.{k}")]
    if kind == "object":
        if not isinstance(v, dict):
            return [f"{path}: expected an object, got {json.dumps(v)[:80]}"]
        out = [f"{path}: missing key '{k}'" for k in node[1] if k not in v]
        return out + [e for k, sub in node[1].items() if k in v
                      for e in violations(sub, v[k], f"{path}.{k}")]
    raise ValueError(f"bad schema node {node!r}")


def main(argv):
    if len(argv) < 2:
        print("usage: seed_schema.py REPORT [--status S] [--category C] [--k K] "
              "[--earliest J|null] [--tolerance ATOL,RTOL]", file=sys.stderr)
        return 2
    opts = dict(zip(argv[2::2], argv[3::2]))
    with open(argv[1]) as f:
        r = json.load(f)
    bad = violations(REPORT, r, "report")
    ff = r.get("first_failure") if isinstance(r, dict) else None
    if "--status" in opts and r.get("status") != opts["--status"]:
        bad.append(f"report.status: {r.get('status')}, expected {opts['--status']}")
    if "--status" in opts and (opts["--status"] == "PASS") != (ff is None):
        bad.append(f"report.first_failure: {ff} with status {r.get('status')}")
    if "--category" in opts and (ff or {}).get("failure_category") != opts["--category"]:
        bad.append(f"first_failure.failure_category: {(ff or {}).get('failure_category')}, "
                   f"expected {opts['--category']}")
    if "--k" in opts:
        k = int(opts["--k"])
        if r.get("up_to_module") != k:
            bad.append(f"report.up_to_module: {r.get('up_to_module')}, expected {k}")
        if ff is not None and ff.get("failing_module_boundary") != k:
            bad.append(f"first_failure.failing_module_boundary: "
                       f"{ff.get('failing_module_boundary')!r}, expected {k}")
    if "--earliest" in opts:
        want = None if opts["--earliest"] == "null" else int(opts["--earliest"])
        got = (ff or {}).get("earliest_failing_boundary", "<missing>")
        if got != want or (want is not None and type(got) is not int):
            bad.append(f"first_failure.earliest_failing_boundary: {got!r}, expected {want!r}")
        if type(got) is int and isinstance(ff.get("failing_module_boundary"), int) \
                and not 1 <= got <= ff["failing_module_boundary"]:
            bad.append(f"first_failure.earliest_failing_boundary {got} is not in 1..k")
    if "--tolerance" in opts:
        atol, rtol = (float(x) for x in opts["--tolerance"].split(","))
        n = 0
        for c in r.get("checks", []):
            for t in c.get("per_tensor", []):
                if not t.get("values_checked"):
                    continue
                n += 1
                if (t.get("atol"), t.get("rtol")) != (atol, rtol):
                    bad.append(f"checks[{c.get('id')}].per_tensor[{t.get('name')}/"
                               f"{t.get('mode')}]: atol {t.get('atol')} rtol {t.get('rtol')}, "
                               f"expected {atol} {rtol}")
        if n == 0:
            bad.append("no value-checked per_tensor entry to show the tolerance")
    for b in bad:
        print(f"{argv[1]}: {b}")
    if not bad:
        print(f"{argv[1]}: the seed's schema holds")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
