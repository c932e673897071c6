#!/usr/bin/env python3
"""Builds phasegate's Python side as a wheel, stdlib only (run by the build, installed as
<prefix>/share/phasegate/python/phasegate-<version>-py3-none-any.whl; docs/python.md):

    make_wheel.py --src tools/python --version 0.1.0 --out DIR

The wheel holds the phasegate package (phasegate/*.py) and the compatibility module
pg_exec_helper.py, with METADATA, WHEEL and RECORD (sha256 of every file), so that
`python3 -m venv v && v/bin/pip install --no-index <wheel>` works offline. The zip is
reproducible: fixed timestamps and permissions, files in sorted order.
"""
import argparse
import base64
import hashlib
import os
import re
import sys
import zipfile

NAME = "phasegate"
STAMP = (1980, 1, 1, 0, 0, 0)


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def sources(src):
    """[(archive name, bytes)] of the package and the compatibility module."""
    out = []
    pkg = os.path.join(src, NAME)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            with open(os.path.join(pkg, name), "rb") as f:
                out.append((f"{NAME}/{name}", f.read()))
    helper = os.path.join(src, "..", "pg_exec_helper.py")
    with open(helper, "rb") as f:
        out.append(("pg_exec_helper.py", f.read()))
    return out


def package_version(files):
    init = dict(files)[f"{NAME}/__init__.py"].decode()
    m = re.search(r'^__version__ = "([^"]+)"', init, re.M)
    return m.group(1) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True, help="tools/python (holds phasegate/)")
    ap.add_argument("--version", required=True, help="the project version")
    ap.add_argument("--out", required=True, help="directory to write the wheel into")
    a = ap.parse_args()
    files = sources(a.src)
    pv = package_version(files)
    if pv != a.version:
        sys.exit(f"make_wheel.py: phasegate/__init__.py says __version__ = {pv!r}, the project "
                 f"version is {a.version!r}: make them equal")
    dist = f"{NAME}-{a.version}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {a.version}\n"
                "Summary: phasegate's Python side: the worker behind python: impls and Python "
                "goldens, and the exec/worker impl helper\n"
                "Requires-Python: >=3.8\nRequires-Dist: numpy\n"
                "License: see the phasegate distribution\n").encode()
    wheel = ("Wheel-Version: 1.0\nGenerator: phasegate make_wheel.py\nRoot-Is-Purelib: true\n"
             "Tag: py3-none-any\n").encode()
    files += [(f"{dist}/METADATA", metadata), (f"{dist}/WHEEL", wheel)]
    record = "".join(f"{n},{record_hash(d)},{len(d)}\n" for n, d in files)
    record += f"{dist}/RECORD,,\n"
    files.append((f"{dist}/RECORD", record.encode()))
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"{NAME}-{a.version}-py3-none-any.whl")
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            info = zipfile.ZipInfo(name, STAMP)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, path)
    print(path)


if __name__ == "__main__":
    main()
