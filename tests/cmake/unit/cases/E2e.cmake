# The end-to-end check (docs/pypto.md "The end-to-end check"): an op directory holding
# the integrated <op>_impl.py gets the test <op>/e2e (`run --e2e` with the case tests'
# options); one without it does not.
file(REMOVE_RECURSE "${CMAKE_CURRENT_BINARY_DIR}/whole")
file(COPY "${OPS}/basic/" DESTINATION "${CMAKE_CURRENT_BINARY_DIR}/whole")
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/whole/py_impl.py" "def py_wrapper(*a):\n    pass\n")
set(Python3_EXECUTABLE /usr/bin/python3)
phasegate_add_op(py OP_DIR "${CMAKE_CURRENT_BINARY_DIR}/whole" IMPL_PYTHON impls/impl.py
  RUNNER "${FAKE_RUNNER}" MODES sim npu TIMEOUT 30)
phasegate_add_op(staged OP_DIR ${OPS}/basic IMPL_PYTHON impls/impl.py RUNNER "${FAKE_RUNNER}")
