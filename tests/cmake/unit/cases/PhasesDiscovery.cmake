# The module count is unknown at configure time (no total_modules, no `id:` lines):
# discovery, which learns it from `phasegate list`, refuses PHASES 3 of a 2-module op.
phasegate_add_op(x OP_DIR ${OPS}/nocount IMPL fake_impl RUNNER "${FAKE_RUNNER}" PHASES 3)
