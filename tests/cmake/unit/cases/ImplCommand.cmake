# IMPL_COMMAND (exec:) and REPLAY keep no process between calls: no `phasegate serve`
# fixture pair, no --serve-control.
phasegate_add_op(cmd OP_DIR ${OPS}/basic IMPL_COMMAND /bin/echo $<TARGET_FILE:fake_impl>
  RUNNER "${FAKE_RUNNER}" MODES sim)
phasegate_add_op(rep OP_DIR ${OPS}/basic REPLAY dumps RUNNER "${FAKE_RUNNER}")
