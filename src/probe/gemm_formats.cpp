// The GEMM format rows and the inputs and check every back-end shares (gemm_formats.hpp).
#include "gemm_formats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "shardplan/error.hpp"

namespace shardplan::probe {
namespace {

// Element encodings. E4M3 is the "fn" variant FP8 training uses (OCP 8-bit floating point
// specification v1.0: bias 7, no infinities); E2M1 is OCP MX v1.0's FP4 (bias 1); UE8M0 and UE4M3
// are the unsigned block-scale encodings of MXFP8 (OCP MX v1.0) and NVFP4 (NVIDIA Blackwell).
constexpr Encoding kFp64{11, 52, 1023, true};
constexpr Encoding kFp32{8, 23, 127, true};
constexpr Encoding kTf32{8, 10, 127, true};  // stored as fp32; the tensor cores read 10 bits
constexpr Encoding kBf16{8, 7, 127, true};
constexpr Encoding kFp16{5, 10, 15, true};
constexpr Encoding kE4m3{4, 3, 7, true};
constexpr Encoding kE2m1{2, 1, 1, true};
constexpr Encoding kUe8m0{8, 0, 127, false};
constexpr Encoding kUe4m3{4, 3, 7, false};
constexpr Encoding kNoScale{0, 0, 0, false};

constexpr std::string_view kCublasTypes =
    "cuBLAS documentation, cublasLtMatmul() data types and scaling modes (CUDA 12.8+)";

}  // namespace

const std::vector<GemmFormat>& gemm_formats() {
  static const std::vector<GemmFormat> rows = {
      {"nvfp4", MathDtype::fp4, true, kE2m1, GemmScaling::per_block, 16, kUe4m3, 100, false,
       "NVFP4 GEMMs (CUDA_R_4F_E2M1 with VEC16_UE4M3 block scales) need Blackwell tensor cores, "
       "compute capability 10.0 or later",
       kCublasTypes},
      {"mxfp8", MathDtype::fp8, true, kE4m3, GemmScaling::per_block, 32, kUe8m0, 100, false,
       "MXFP8 GEMMs (E4M3 with VEC32_UE8M0 block scales) need Blackwell tensor cores, compute "
       "capability 10.0 or later",
       kCublasTypes},
      // Transformer Engine runs its FP8 forward GEMMs with fast accumulation
      // (use_split_accumulator=False for fprop in its FP8 recipes).
      {"fp8", MathDtype::fp8, false, kE4m3, GemmScaling::per_tensor, 0, kNoScale, 89, true,
       "FP8 GEMMs need Ada or Hopper tensor cores, compute capability 8.9 or later",
       "cuBLAS documentation, cublasLtMatmul() FP8 rules (TN layout, per-tensor scale pointers); "
       "Transformer Engine's FP8 recipes (fast accumulation in the forward GEMM)"},
      {"bf16", MathDtype::bf16, false, kBf16, GemmScaling::none, 0, kNoScale, 80, false,
       "bf16 GEMMs need Ampere tensor cores, compute capability 8.0 or later", kCublasTypes},
      {"fp16", MathDtype::fp16, false, kFp16, GemmScaling::none, 0, kNoScale, 70, false,
       "fp16 tensor-core GEMMs need compute capability 7.0 or later", kCublasTypes},
      {"tf32", MathDtype::tf32, false, kTf32, GemmScaling::none, 0, kNoScale, 80, false,
       "TF32 (CUBLAS_COMPUTE_32F_FAST_TF32) needs Ampere tensor cores, compute capability 8.0 or "
       "later",
       kCublasTypes},
      {"fp32", MathDtype::fp32, false, kFp32, GemmScaling::none, 0, kNoScale, 0, false, "",
       kCublasTypes},
      {"fp64", MathDtype::fp64, false, kFp64, GemmScaling::none, 0, kNoScale, -1, false,
       "the GPU path times no fp64 GEMM: no training recipe runs one (the mpi back-end times "
       "dgemm on CPUs)",
       kCublasTypes},
  };
  return rows;
}

const GemmFormat& gemm_format_of(const GemmShape& shape) {
  for (const GemmFormat& f : gemm_formats()) {
    if (f.dtype == shape.dtype && f.block_scaled == shape.block_scaled) return f;
  }
  // fp4 exists only block-scaled: a shape that says fp4 means NVFP4.
  for (const GemmFormat& f : gemm_formats()) {
    if (f.dtype == shape.dtype) return f;
  }
  SHARDPLAN_CHECK(false, "no GEMM format row for this data type");
  return gemm_formats().front();
}

const GemmFormat* find_gemm_format(std::string_view name) {
  if (name == "fp4") name = "nvfp4";
  for (const GemmFormat& f : gemm_formats()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string gemm_format_names() {
  std::string out;
  for (const GemmFormat& f : gemm_formats()) {
    if (!out.empty()) out += ", ";
    out += f.name;
    if (f.name == "nvfp4") out += " (or fp4)";
  }
  return out;
}

GemmShape gemm_shape(long m, long n, long k, const std::string& format, std::string label,
                     const std::string& field) {
  const GemmFormat* f = find_gemm_format(format);
  if (f == nullptr) {
    throw InputError(field,
                     fmt::format("'{}' is not a GEMM format; use {}", format, gemm_format_names()));
  }
  GemmShape s{m, n, k, f->dtype, std::move(label)};
  s.block_scaled = f->block_scaled;
  return s;
}

std::string gemm_format_name(const GemmShape& shape) {
  return std::string(gemm_format_of(shape).name);
}

uint64_t encode_element(double value, const Encoding& e) {
  const int eb = e.exponent_bits, mb = e.mantissa_bits;
  uint64_t sign = 0;
  if (std::signbit(value)) {
    SHARDPLAN_CHECK(e.is_signed, "a negative value in an unsigned encoding");
    sign = 1;
    value = -value;
  }
  uint64_t exponent = 0, mantissa = 0;
  if (value != 0) {
    int x = 0;
    const double f = std::frexp(value, &x);  // value = f 2^x, f in [0.5, 1)
    long biased = static_cast<long>(x) - 1 + e.bias;
    if (biased >= 1) {
      mantissa = static_cast<uint64_t>(std::nearbyint((2 * f - 1) * std::ldexp(1.0, mb)));
    } else {  // subnormal: a multiple of 2^(1 - bias - mb)
      biased = 0;
      mantissa = static_cast<uint64_t>(std::nearbyint(std::ldexp(value, e.bias - 1 + mb)));
    }
    if (mantissa >> mb) {  // rounded up to the next power of two
      mantissa = 0;
      ++biased;
    }
    SHARDPLAN_CHECK(biased < (1L << eb), "value out of the encoding's range");
    exponent = static_cast<uint64_t>(biased);
  }
  return (sign << (eb + mb)) | (exponent << mb) | mantissa;
}

double decode_element(uint64_t bits, const Encoding& e) {
  const int eb = e.exponent_bits, mb = e.mantissa_bits;
  const uint64_t mantissa = bits & ((uint64_t{1} << mb) - 1);
  const long exponent = static_cast<long>((bits >> mb) & ((uint64_t{1} << eb) - 1));
  const bool negative = e.is_signed && ((bits >> (eb + mb)) & 1);
  const double m = static_cast<double>(mantissa);
  const double v =
      exponent == 0 ? std::ldexp(m, 1 - e.bias - mb)
                    : std::ldexp(std::ldexp(1.0, mb) + m, static_cast<int>(exponent) - e.bias - mb);
  return negative ? -v : v;
}

double gemm_input(const GemmFormat& format, int matrix, size_t index) {
  // splitmix64's finaliser over (index, matrix): independent-looking bits per element.
  uint64_t x = index * 2 + static_cast<uint64_t>(matrix) + 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  const Encoding& e = format.element;
  const int mb = e.mantissa_bits;
  const uint64_t mantissa = (x >> 1) & ((uint64_t{1} << mb) - 1);
  const int lowest = std::max(-2, 1 - e.bias);  // the smallest normal exponent, or -2
  const int exponent = lowest + static_cast<int>((x >> 56) % 3);
  const double v = std::ldexp(1.0 + std::ldexp(static_cast<double>(mantissa), -mb), exponent);
  return (x & 1) ? -v : v;
}

const Encoding& output_encoding(const GemmFormat& f) {
  switch (f.dtype) {
    case MathDtype::fp16:
      return kFp16;
    case MathDtype::tf32:
    case MathDtype::fp32:
      return kFp32;
    case MathDtype::fp64:
      return kFp64;
    default:
      return kBf16;
  }
}

std::vector<unsigned char> encode_inputs(const GemmFormat& f, int matrix, size_t count) {
  const Encoding& storage = f.dtype == MathDtype::tf32 ? kFp32 : f.element;
  const int bits = f.storage_bits();
  std::vector<unsigned char> out((count * static_cast<size_t>(bits) + 7) / 8, 0);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t word = encode_element(gemm_input(f, matrix, i), storage);
    if (bits == 4) {
      out[i / 2] |= static_cast<unsigned char>((word & 0xF) << (i % 2 ? 4 : 0));
      continue;
    }
    for (int byte = 0; byte < bits / 8; ++byte) {
      out[i * static_cast<size_t>(bits / 8) + static_cast<size_t>(byte)] =
          static_cast<unsigned char>(word >> (8 * byte));
    }
  }
  return out;
}

std::vector<std::pair<long, long>> gemm_check_points(const GemmShape& s) {
  std::vector<std::pair<long, long>> points = {
      {0, 0}, {s.m - 1, s.n - 1}, {s.m - 1, 0}, {0, s.n - 1}, {s.m / 2, s.n / 3}};
  for (long t = 1; t <= 3; ++t) points.emplace_back(s.m * t / 4, s.n * (4 - t) / 4);
  return points;
}

bool gemm_output_ok(const GemmShape& s, long i, long j, double value) {
  const GemmFormat& f = gemm_format_of(s);
  double exact = 0, magnitude = 0;
  for (long l = 0; l < s.k; ++l) {
    const double a = gemm_input(f, 0, static_cast<size_t>(l + i * s.k));
    const double b = gemm_input(f, 1, static_cast<size_t>(l + j * s.k));
    exact += a * b;
    magnitude += std::fabs(a * b);
  }
  return std::fabs(value - exact) <= 0.01 * magnitude + 1e-6;
}

size_t block_scale_bytes(long outer, long k, int block_size) {
  const auto round_up = [](long v, long to) { return (v + to - 1) / to * to; };
  const long blocks = (k + block_size - 1) / block_size;
  return static_cast<size_t>(round_up(outer, 128) * round_up(blocks, 4));
}

}  // namespace shardplan::probe
