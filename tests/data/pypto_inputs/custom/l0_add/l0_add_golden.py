def l0_add_golden(a, b):
    return a + b
