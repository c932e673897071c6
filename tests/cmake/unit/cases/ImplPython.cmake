# IMPL_PYTHON: a pypto-workflow impl module (python:), persistent like IMPL_WORKER: the
# `phasegate serve` fixture pair, --python from PHASEGATE_PYTHON (else
# Python3_EXECUTABLE) on run and serve alike; FUNCTION picks one function for every phase.
set(PHASEGATE_PYTHON "/opt/my py/bin/python3")
phasegate_add_op(py OP_DIR ${OPS}/basic IMPL_PYTHON impls/impl.py RUNNER "${FAKE_RUNNER}"
  MODES sim npu)
set(PHASEGATE_PYTHON "")
set(Python3_EXECUTABLE /usr/bin/python3)
phasegate_add_op(pyfn OP_DIR ${OPS}/basic IMPL_PYTHON ${CMAKE_CURRENT_SOURCE_DIR}/impls/impl.py
  FUNCTION my_wrapper RUNNER "${FAKE_RUNNER}" GATE OFF)
