# IMPL_WORKER: a persistent command (worker:), kept warm across case tests by the
# `phasegate serve` fixture pair; EXTRA_ARGS' memory limit reaches the daemon (it is part
# of a warm process's key), --fresh-process drops the pair (nothing to keep warm).
phasegate_add_op(wrk OP_DIR ${OPS}/basic IMPL_WORKER python3 -u run_case.cmake $<TARGET_FILE:fake_impl>
  RUNNER "${FAKE_RUNNER}" MODES sim npu EXTRA_ARGS --memory-limit=512M)
phasegate_add_op(fresh OP_DIR ${OPS}/basic IMPL_WORKER /bin/true RUNNER "${FAKE_RUNNER}"
  GATE OFF EXTRA_ARGS --fresh-process)
phasegate_add_op(frac OP_DIR ${OPS}/basic IMPL fake_impl RUNNER "${FAKE_RUNNER}" GATE OFF
  EXTRA_ARGS --memory-limit 1.5G)
