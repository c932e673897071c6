# tests/impl/python: a directory named pypto in the working directory, without pypto's API
# (no RunMode), as the checkout's own suites/pypto is: it must not make anything a pypto
# impl. Importing it works (the worker must never take that for pypto).
NOT_PYPTO = True
