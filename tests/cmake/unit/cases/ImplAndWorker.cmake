phasegate_add_op(x OP_DIR ${OPS}/basic IMPL fake_impl IMPL_WORKER python3 w.py RUNNER "${FAKE_RUNNER}")
