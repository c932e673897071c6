phasegate_add_op(x OP_DIR ${OPS}/basic IMPL_COMMAND python3 e.py IMPL_WORKER python3 w.py
  RUNNER "${FAKE_RUNNER}")
