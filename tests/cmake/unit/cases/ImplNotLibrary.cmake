add_library(iface INTERFACE)
phasegate_add_op(x OP_DIR ${OPS}/basic IMPL iface RUNNER "${FAKE_RUNNER}")
