# Case ids with ; [ ] # ${var} $<...> spaces quotes backslashes and ]==] survive
# discovery, quoting in the generated file, ctest and the runner's argv.
phasegate_add_op(awkward OP_DIR ${OPS}/awkward IMPL fake_impl RUNNER "${FAKE_RUNNER}")
