# The phase gate, labels, modes, timeouts and skip rules with a 3-module op.
phasegate_add_op(basic OP_DIR ${OPS}/basic IMPL fake_impl RUNNER "${FAKE_RUNNER}"
  MODES sim npu TIMEOUT 10 LABELS extra_label)
