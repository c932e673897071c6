"""The stand-in's pypto.frontend.jit: a wrapper keeping runtime_options like pypto's
JitCallableWrapper; each call logs (stderr) and records the run_mode it received."""
import sys

RECEIVED = []   # the run_mode of every call, in order


class JitCallableWrapper:
    def __init__(self, func, runtime_options=None):
        self._original_func = func
        self._runtime_options = runtime_options or {}
        self.__name__ = getattr(func, "__name__", "kernel")

    def __call__(self, *args, **kwargs):
        mode = self._runtime_options.get("run_mode")
        RECEIVED.append(mode)
        name = getattr(mode, "name", repr(mode))
        print(f"pypto.frontend.jit {self.__name__}: runtime_options run_mode = {name}",
              file=sys.stderr)
        return self._original_func(*args, **kwargs)


def jit(func=None, *, runtime_options=None, **_options):
    if func is None:
        return lambda f: JitCallableWrapper(f, runtime_options)
    return JitCallableWrapper(func, runtime_options)
