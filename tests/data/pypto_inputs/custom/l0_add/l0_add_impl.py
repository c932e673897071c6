import os


def l0_add_wrapper(a, b):
    c = a + b
    if os.environ.get("L0_ADD_BUG") == "1":   # the planted bug: the last element dropped
        c[-1] = 0.0
    return c
