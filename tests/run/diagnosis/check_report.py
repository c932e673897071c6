#!/usr/bin/env python3
"""Checks a phasegate report and console for tests/run/diagnosis.

  check_report.py REPORT CONSOLE ASSERTION...
    status=PASS         the report's status
    hint=KIND           some per_tensor hint has this kind
    nohint=KIND         no per_tensor hint has this kind
    detail~=TEXT        some hint detail contains TEXT
    console~=TEXT       the console contains TEXT
    noconsole~=TEXT     the console does not contain TEXT
    noreport~=TEXT      the report file does not contain TEXT
    tensor.KEY=VALUE    every per_tensor entry with KEY has this value (JSON text), and
                        at least one has KEY
    tensor.KEY?         some per_tensor entry has KEY
    hint.KIND.KEY=N     some hint of this kind has the geometry KEY (axis, tile) = N;
                        N = none: no hint of this kind has KEY
"""
import json
import sys


def main():
    report_path, console_path = sys.argv[1], sys.argv[2]
    text = open(report_path).read()
    rep = json.loads(text)
    console = open(console_path).read()
    tensors = [t for c in rep.get("checks", []) for t in c.get("per_tensor", [])]
    hints = [h for t in tensors for h in t.get("hints", [])]
    bad = 0
    for a in sys.argv[3:]:
        ok = True
        if a.startswith("status="):
            ok = rep.get("status") == a[7:]
        elif a.startswith("hint="):
            ok = any(h["kind"] == a[5:] for h in hints)
        elif a.startswith("nohint="):
            ok = not any(h["kind"] == a[7:] for h in hints)
        elif a.startswith("detail~="):
            ok = any(a[8:] in h["detail"] for h in hints)
        elif a.startswith("console~="):
            ok = a[9:] in console
        elif a.startswith("noconsole~="):
            ok = a[11:] not in console
        elif a.startswith("noreport~="):
            ok = a[10:] not in text
        elif a.startswith("hint."):
            kind, rest = a[5:].split(".", 1)
            key, val = rest.split("=", 1)
            of = [h for h in hints if h["kind"] == kind]
            if val == "none":
                ok = bool(of) and all(key not in h for h in of)
            else:
                ok = any(h.get(key) == int(val) for h in of)
        elif a.startswith("tensor.") and a.endswith("?"):
            ok = any(a[7:-1] in t for t in tensors)
        elif a.startswith("tensor."):
            key, val = a[7:].split("=", 1)
            have = [t[key] for t in tensors if key in t]
            ok = bool(have) and all(json.dumps(v) == val for v in have)
        else:
            print("check_report.py: unknown assertion " + a)
            ok = False
        if not ok:
            print("check_report.py: FAILED: " + a)
            bad += 1
    if bad:
        print("hints:", json.dumps(hints, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
