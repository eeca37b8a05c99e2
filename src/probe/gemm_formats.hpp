// The GEMM formats the probe times, one row each (gemm_formats.cpp): element encoding, scaling,
// the compute capability cuBLASLt needs, fast accumulation; and the inputs every back-end feeds
// them (random signs and mantissas, exact in the format) with the host-side check of D.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardplan/probe.hpp"

namespace shardplan::probe {

/// A floating-point element encoding: sign, `exponent_bits`, `mantissa_bits`, IEEE-style bias,
/// no infinities needed (the probe's inputs stay small). fp32 and fp64 are IEEE binary32/64.
struct Encoding {
  int exponent_bits = 8;
  int mantissa_bits = 23;
  int bias = 127;
  bool is_signed = true;
  int bits() const { return (is_signed ? 1 : 0) + exponent_bits + mantissa_bits; }
};

/// How a format's inputs are scaled: none (16 and 32 bits), one fp32 scale per tensor (FP8 as
/// Transformer Engine's delayed / current scaling runs it), or one scale per block of
/// `block_size` consecutive K elements (OCP MXFP8: 32, UE8M0 scales; NVFP4: 16, UE4M3 scales).
enum class GemmScaling { none, per_tensor, per_block };

struct GemmFormat {
  std::string_view name;  // "bf16", "fp8", "mxfp8", "nvfp4"
  MathDtype dtype;        // the peak it is measured against
  bool block_scaled;      // GemmShape::block_scaled
  Encoding element;
  GemmScaling scaling;
  int block_size;              // K elements per scale (per_block)
  Encoding scale;              // the per-block scale's encoding (per_block)
  int min_compute_capability;  // cuBLASLt's: 80 = sm_80; 0: any GPU; -1: never on GPUs
  bool fast_accumulation;      // CUBLASLT_MATMUL_DESC_FAST_ACCUM (FP8 forward GEMMs)
  std::string_view why_not;    // a GPU below min_compute_capability: what the format needs
  std::string_view source;
  /// Bits one element occupies in memory (TF32 is read from fp32 storage).
  int storage_bits() const { return dtype == MathDtype::tf32 ? 32 : element.bits(); }
};

/// Every format, in the order a GPU sweep tries them (lowest precision first).
const std::vector<GemmFormat>& gemm_formats();
/// The row of a shape: its dtype, block-scaled or not.
const GemmFormat& gemm_format_of(const GemmShape& shape);
/// The row named `name` ("fp4" is NVFP4's alias); nullptr if none.
const GemmFormat* find_gemm_format(std::string_view name);
/// The name a shape's rows carry: "mxfp8" for a block-scaled fp8 GEMM, else to_string(dtype).
std::string gemm_format_name(const GemmShape& shape);

/// Bits of `value` in `e` (round to nearest even; the probe's inputs are exact) and back.
uint64_t encode_element(double value, const Encoding& e);
double decode_element(uint64_t bits, const Encoding& e);

/// The encoding of D for a format: bf16 for the 8- and 4-bit formats and bf16 (what training
/// keeps), fp16 for fp16, fp32 for tf32 and fp32, fp64 for fp64.
const Encoding& output_encoding(const GemmFormat& format);
/// `count` elements of A (matrix 0) or B (1) as the format stores them: little-endian words of
/// storage_bits(), two 4-bit elements per byte with the first in the low nibble (CUDA's
/// __nv_fp4x2_e2m1).
std::vector<unsigned char> encode_inputs(const GemmFormat& format, int matrix, size_t count);

/// Element `index` of A (matrix 0, stored k x m) or B (matrix 1, k x n): a random sign, a random
/// mantissa using every mantissa bit of the format, and an exponent of -2..0 (0..2 where the
/// format has no smaller normal numbers), never zero, exact in the format. Random mantissas,
/// not a few round values: a power-limited GPU runs 10-15% faster on data whose bits rarely
/// toggle, which a training step's tensors are not.
double gemm_input(const GemmFormat& format, int matrix, size_t index);
/// The outputs D(i, j) the check compares with the host's exact sum: corners and a few spread.
std::vector<std::pair<long, long>> gemm_check_points(const GemmShape& shape);
/// Whether D(i, j) is within 1% of sum |a b| of the exact result (the output rounds to 16 bits,
/// FP8 fast accumulation keeps fewer bits); a GEMM that computed something else misses by far
/// more.
bool gemm_output_ok(const GemmShape& shape, long i, long j, double value);

/// Bytes of one operand's block scales in cuBLASLt's interleaved layout: the outer dimension
/// padded to 128 rows and the K blocks to 4 (cuBLAS documentation, "1D Block Scaling Factors
/// Layout"). Every scale the probe writes is 1.0, so the order inside the layout does not matter.
size_t block_scale_bytes(long outer, long k, int block_size);

}  // namespace shardplan::probe
