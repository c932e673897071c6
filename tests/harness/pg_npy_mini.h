/* tests/harness/pg_npy_mini.h — a small .npy reader and writer for the test drivers
 * of compare/ and goldens/ (the numpy differential tests). It is deliberately not
 * runner/tensors/npy.c: those components are tested without runner/, and a bug in the
 * product's .npy code must not hide behind the same bug in the test's. Little-endian,
 * C order, format versions 1-3; bfloat16 travels as '<u2' (phasegate's convention). */
#ifndef PG_NPY_MINI_H
#define PG_NPY_MINI_H

#include <stddef.h>

#include "phasegate/tensor.h"

/* The numpy descr of a dtype ("<f4", …), NULL when it has none. */
const char *pg_test_npy_descr(enum pg_dtype t);

/* Reads PATH into t (initialised here). Returns 0, or -1 with the reason in why
 * ("PATH: not a .npy file", …). */
int pg_test_npy_read(const char *path, struct pg_tensor *t, char *why, size_t why_size);

/* Writes t as a version 1.0 .npy. Returns 0 or -1. */
int pg_test_npy_write(const char *path, const struct pg_tensor *t);

#endif
