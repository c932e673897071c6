#!/bin/sh
# `phasegate serve` under faults: see serve_faults.py (docs/testing.md, "Serve under load and
# faults"). The logic is Python (/usr/bin/python3, standard library only).
exec /usr/bin/python3 "$(dirname "$0")/serve_faults.py" "$@"
