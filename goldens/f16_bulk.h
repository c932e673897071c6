/* goldens/f16_bulk.h — whole-array fp16 <-> fp32 conversion for the golden composition.
 *
 * Same values as the scalar pg_f16_to_f32 / pg_f32_to_f16 of phasegate/tensor.h
 * (IEEE round-to-nearest-even, denormals, ±0, ±inf exact; a NaN stays a NaN, its
 * payload may differ), 8 per instruction with F16C when the CPU has it (checked at
 * run time), else the scalar loop. The golden of a small fp16 case spends most of
 * its time widening inputs and rounding boundary outputs through fp16 otherwise.
 */
#ifndef PHASEGATE_F16_BULK_H
#define PHASEGATE_F16_BULK_H

#include <stdint.h>

void pg__f16_to_f32_n(const uint16_t *in, float *out, int64_t n);
void pg__f32_to_f16_n(const float *in, uint16_t *out, int64_t n);
/* p[i] = f16_to_f32(f32_to_f16(p[i])): storing to fp16 and reading back. */
void pg__f32_round_f16_n(float *p, int64_t n);

#endif
