#!/usr/bin/env python3
"""A worker that offers protocol v1.1 (tensors in call memory) in its handshake and then
breaks it on purpose, one way per LIAR_FAULT (docs/worker_protocol.md "Version 1.1"):

  none          keeps it: every output written with zeros, "memory" echoed (a control)
  no_memory     answers "ok" without "memory", as if it had written files
  wrong_size    echoes another memory size than the request's
  bad_outputs   answers an "outputs" list that is not the declared outputs
  wrong_dtype   says it produced float64 for every output (and writes nothing)
  overrun       writes 8 bytes past the end of the first output (its guard bytes)
  unwritten     answers "ok" with "memory" but writes nothing
  truncate      tries to shrink the call memory (ftruncate to 0) and says whether it
                could on stderr, then behaves (the runner's memfd is sealed: it cannot)

Raw protocol, no helper: it reads fd R with recvmsg to receive the memfd. Needs only
the standard library, so it exercises the runner, not phasegate's Python side.
"""
import json
import mmap
import os
import socket
import sys

fault = os.environ.get("LIAR_FAULT", "none")
r, w = (int(x) for x in os.environ["PHASEGATE_WORKER_FDS"].split(","))
sock = socket.socket(fileno=r)
out = os.fdopen(w, "wb")
os.dup2(2, 1)


def send(obj):
    out.write((json.dumps(obj) + "\n").encode())
    out.flush()


send({"phasegate_worker": 1, "shm": 1})
buf, mem = b"", None
while True:
    fds = []
    while b"\n" not in buf:
        data, anc, _, _ = sock.recvmsg(1 << 16, socket.CMSG_SPACE(16))
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += [int.from_bytes(payload[i:i + 4], sys.byteorder)
                        for i in range(0, len(payload) - 3, 4)]
        if not data:
            sys.exit(0)
        buf += data
    line, _, buf = buf.partition(b"\n")
    req = json.loads(line)
    if fds:
        fd = fds[-1]
        if fault == "truncate":
            try:
                os.ftruncate(fd, 0)
                print("liar: the call memory WAS truncated", file=sys.stderr)
            except OSError as e:
                print(f"liar: truncation refused ({e.strerror})", file=sys.stderr)
        mem = mmap.mmap(fd, os.fstat(fd).st_size)
        os.close(fd)
    size = req["memory"]["size"]
    if fault not in ("unwritten", "wrong_dtype"):
        for t in req["outputs"]:
            mem[t["offset"]:t["offset"] + t["nbytes"]] = bytes(t["nbytes"])
    if fault == "overrun":
        t = req["outputs"][0]
        end = t["offset"] + t["nbytes"]
        mem[end:end + 8] = b"\x01" * 8
    answer = {"id": req["id"], "status": "ok", "memory": size}
    if fault == "no_memory":
        del answer["memory"]
    elif fault == "wrong_size":
        answer["memory"] = size + 4096
    elif fault == "bad_outputs":
        answer["outputs"] = [{"name": "not_an_output", "dtype": "float32", "shape": [1]}]
    elif fault == "wrong_dtype":
        answer["outputs"] = [{"name": t["name"], "dtype": "float64", "shape": t["shape"]}
                             for t in req["outputs"]]
    sys.stderr.flush()
    send(answer)
