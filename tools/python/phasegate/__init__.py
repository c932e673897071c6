"""phasegate's Python side (docs/python.md).

- phasegate.protocol: the exec/worker impl protocol (Request, serve, main), the API
  that tools/pg_exec_helper.py re-exports for existing impls;
- phasegate.npy: the dtype vocabulary and .npy I/O (bfloat16 travels as '<u2');
- phasegate.worker: the one worker program behind `--impl python:FILE.py` and Python
  goldens, run as `python3 -m phasegate.worker`.
"""
__version__ = "0.1.0"
