# phasegate tests — day one: the toy op's impl module (pypto workflow) with M1 only.
# toy_module12_wrapper and toy_module123_wrapper do not exist yet: PHASES 1 says so.


def toy_module1_wrapper(x):
    return x * 2
