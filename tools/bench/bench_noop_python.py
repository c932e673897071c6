"""A no-op `python:` impl for bench_persist: returns its input, which phasegate's Python
worker writes as the output (into call memory with worker protocol v1.1, as a .npy file
with PHASEGATE_WORKER_NO_SHM=1)."""


def bench_module1_wrapper(x):
    return x
