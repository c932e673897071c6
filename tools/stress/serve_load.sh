#!/bin/sh
# `phasegate serve` under load: see serve_load.py (docs/testing.md, "Serve under load and
# faults"). The logic is Python (/usr/bin/python3, standard library only).
exec /usr/bin/python3 "$(dirname "$0")/serve_load.py" "$@"
