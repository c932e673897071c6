# INSPECT <name> and PHASEGATE_<op>_INSPECT add --inspect to every case test (the pypto
# workflow's probes are opt-in, docs/pypto.md "Inspection probes"); without either, no
# --inspect.
set(PHASEGATE_viavar_INSPECT h)
phasegate_add_op(witharg OP_DIR ${OPS}/basic IMPL_COMMAND true RUNNER "${FAKE_RUNNER}"
  GATE OFF INSPECT acc)
phasegate_add_op(viavar OP_DIR ${OPS}/basic IMPL_COMMAND true RUNNER "${FAKE_RUNNER}" GATE OFF)
phasegate_add_op(plain OP_DIR ${OPS}/basic IMPL_COMMAND true RUNNER "${FAKE_RUNNER}" GATE OFF)
