#!/usr/bin/env python3
"""Diagnosis fixture impl (exec): GELU (erf form) computed in float32, plus one planted
bug chosen by argv[1]:
  none       correct
  biased     every output a little high, inside the tolerance (one-sided errors)
  periodic   columns 12..15 of every 16 off (a tile of 16 mishandled)
  tail       the last partial tile of 32 along N (columns 64..79) off
  nan        a NaN produced at [3, 5] (no input holds one)
  shuffle    the second row half rolled: errors everywhere (no mask pattern)
  rowspread  adds 0 * the row's sum of x: exact on finite inputs, but a non-finite x
             poisons its whole row of y (as a row reduction or softmax would)
  colspread  the same with the column's sum: a non-finite x poisons its column"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
from pg_exec_helper import load_request  # noqa: E402

fault = sys.argv[1] if len(sys.argv) > 1 else "none"
req = load_request()
x = req.input("x", np.float32)
erf = np.vectorize(math.erf)(x.astype(np.float64) / math.sqrt(2.0)).astype(np.float32)
y = (np.float32(0.5) * x * (np.float32(1.0) + erf)).astype(np.float32)
if fault == "biased":
    y = y + np.float32(3e-4) * (np.float32(1.0) + np.abs(y))
elif fault == "periodic":
    cols = np.arange(y.shape[1]) % 16 >= 12
    y[:, cols] += np.float32(0.5)
elif fault == "tail":
    y[:, 64:] -= np.float32(0.25)
elif fault == "nan":
    y[3, 5] = np.nan
elif fault == "rowspread":
    y = y + np.float32(0.0) * x.sum(axis=1, keepdims=True, dtype=np.float32)
elif fault == "colspread":
    y = y + np.float32(0.0) * x.sum(axis=0, keepdims=True, dtype=np.float32)
elif fault == "shuffle":
    y = np.roll(y, 7, axis=1) * np.float32(1.1)
req.write_output("y", y.astype(np.float32))
