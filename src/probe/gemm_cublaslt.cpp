// cuBLASLt GEMMs for the NCCL back-end. Inputs hold {-1, -0.5, 0, 0.5, 1} (exact in every type),
// written as bit patterns so no CUDA kernel or half-precision header is needed; FP8 follows the
// cublasLtMatmul rules: A transposed and B not ("TN"), fp32 compute and scale types, per-tensor
// scale pointers (1.0 here), C and D in bf16, dimensions multiples of 16.
#include "gemm_cublaslt.hpp"

#include <cublasLt.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>

#include "cuda_support.hpp"

namespace shardplan::probe {
namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;  // cuBLASLt workspace; 32 MiB suits Hopper

// Encodings of kGemmValues {-1, -0.5, 0, 0.5, 1} in each storage type.
constexpr uint16_t kBf16Bits[5] = {0xBF80, 0xBF00, 0x0000, 0x3F00, 0x3F80};
constexpr uint16_t kFp16Bits[5] = {0xBC00, 0xB800, 0x0000, 0x3800, 0x3C00};
constexpr uint8_t kFp8E4m3Bits[5] = {0xB8, 0xB0, 0x00, 0x30, 0x38};

struct Types {
  cudaDataType_t ab, cd;
  cublasComputeType_t compute;
  size_t ab_size, cd_size;
};

Types types_of(MathDtype dtype) {
  switch (dtype) {
    case MathDtype::fp8:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2};
    case MathDtype::bf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2};
    case MathDtype::fp16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2};
    case MathDtype::tf32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4};
    default:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4};
  }
}

std::vector<unsigned char> encode_inputs(int matrix, size_t count, MathDtype dtype) {
  const size_t size = types_of(dtype).ab_size;
  std::vector<unsigned char> out(count * size);
  for (size_t i = 0; i < count; ++i) {
    const int code = gemm_input_code(matrix, i);
    unsigned char* at = out.data() + i * size;
    switch (dtype) {
      case MathDtype::fp8:
        *at = kFp8E4m3Bits[code];
        break;
      case MathDtype::bf16:
        std::memcpy(at, &kBf16Bits[code], 2);
        break;
      case MathDtype::fp16:
        std::memcpy(at, &kFp16Bits[code], 2);
        break;
      default:
        std::memcpy(at, &kGemmValues[code], 4);
        break;
    }
  }
  return out;
}

double decode_output(const unsigned char* at, MathDtype dtype) {
  uint16_t h = 0;
  float f = 0;
  switch (dtype) {
    case MathDtype::fp8:
    case MathDtype::bf16: {
      std::memcpy(&h, at, 2);
      const uint32_t bits = static_cast<uint32_t>(h) << 16;  // bf16 is fp32's top half
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case MathDtype::fp16: {
      std::memcpy(&h, at, 2);
      const int exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
      const double v =
          exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
      return (h >> 15) ? -v : v;
    }
    default:
      std::memcpy(&f, at, 4);
      return f;
  }
}

// One GPU's buffers and descriptors for one shape; released on destruction.
struct Run {
  GemmGpu gpu;
  void *a = nullptr, *b = nullptr, *d = nullptr, *scales = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulHeuristicResult_t algo{};
  bool ok = false;
  ~Run() {
    cudaSetDevice(gpu.device);
    if (op) cublasLtMatmulDescDestroy(op);
    for (auto layout : {la, lb, ld}) {
      if (layout) cublasLtMatrixLayoutDestroy(layout);
    }
    for (void* p : {a, b, d, scales}) cudaFree(p);
  }
};

}  // namespace

struct CublasLtGemm::Handle {
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
};

CublasLtGemm::~CublasLtGemm() {
  for (auto& [device, h] : handles_) {
    cudaSetDevice(device);
    cudaFree(h->workspace);
    if (h->lt) cublasLtDestroy(h->lt);
    delete h;
  }
}

bool CublasLtGemm::supports(int cc, MathDtype dtype) {
  switch (dtype) {
    case MathDtype::fp8:
      return cc >= 89;
    case MathDtype::bf16:
      return cc >= 80;
    case MathDtype::fp64:
      return false;
    default:
      return true;
  }
}

std::string CublasLtGemm::version() {
  const size_t v = cublasLtGetVersion();  // major * 10000 + minor * 100 + patch
  return fmt::format("{}.{}.{}", v / 10000, v % 10000 / 100, v % 100);
}

CublasLtGemm::Handle& CublasLtGemm::handle(int device) {
  Handle*& h = handles_[device];
  if (h == nullptr) {
    h = new Handle;
    SHARDPLAN_CUDA(watchdog_, cudaSetDevice(device));
    if (cublasLtCreate(&h->lt) != CUBLAS_STATUS_SUCCESS) {
      watchdog_.fire("cublasLtCreate", __FILE__, __LINE__, "cuBLASLt could not start");
    }
    SHARDPLAN_CUDA(watchdog_, cudaMalloc(&h->workspace, kWorkspaceBytes));
  }
  return *h;
}

namespace {

// The operation, the three layouts and cuBLASLt's first heuristic choice for one GPU's GEMM;
// false when this GPU has no kernel for the shape.
bool describe_gemm(Run& r, const Types& t, const GemmShape& s, cublasLtHandle_t lt,
                   Watchdog& watchdog) {
  const size_t m = s.m, n = s.n, k = s.k;
  // A stored k x m and used transposed, B k x n, D m x n, all column-major.
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  auto set = [&](cublasLtMatmulDescAttributes_t attribute, const void* value, size_t size) {
    return cublasLtMatmulDescSetAttribute(r.op, attribute, value, size) == CUBLAS_STATUS_SUCCESS;
  };
  bool ok = cublasLtMatmulDescCreate(&r.op, t.compute, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
            set(CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)) &&
            set(CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b));
  if (ok && s.dtype == MathDtype::fp8) {
    // Per-tensor scales for A and B: device pointers to fp32 (the compute type), 1.0 each.
    const float ones[2] = {1.0f, 1.0f};
    SHARDPLAN_CUDA(watchdog, cudaMalloc(&r.scales, sizeof(ones)));
    SHARDPLAN_CUDA(watchdog, cudaMemcpyAsync(r.scales, ones, sizeof(ones), cudaMemcpyHostToDevice,
                                             r.gpu.stream));
    const float* scale_a = static_cast<const float*>(r.scales);
    const float* scale_b = scale_a + 1;
    ok = set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_a, sizeof(scale_a)) &&
         set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_b, sizeof(scale_b));
  }
  ok = ok && cublasLtMatrixLayoutCreate(&r.la, t.ab, k, m, k) == CUBLAS_STATUS_SUCCESS &&
       cublasLtMatrixLayoutCreate(&r.lb, t.ab, k, n, k) == CUBLAS_STATUS_SUCCESS &&
       cublasLtMatrixLayoutCreate(&r.ld, t.cd, m, n, m) == CUBLAS_STATUS_SUCCESS;
  int found = 0;
  cublasLtMatmulPreference_t pref = nullptr;
  if (ok && cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS) {
    const size_t workspace = kWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                         sizeof(workspace));
    if (cublasLtMatmulAlgoGetHeuristic(lt, r.op, r.la, r.lb, r.ld, r.ld, pref, 1, &r.algo,
                                       &found) != CUBLAS_STATUS_SUCCESS) {
      found = 0;
    }
    cublasLtMatmulPreferenceDestroy(pref);
  }
  return ok && found > 0;
}

// Counts the checked outputs of one GPU's D that are not what the inputs imply.
int wrong_outputs(const Run& r, const Types& t, const GemmShape& s, Watchdog& watchdog) {
  std::vector<unsigned char> value(t.cd_size);
  SHARDPLAN_CUDA(watchdog, cudaSetDevice(r.gpu.device));
  int wrong = 0;
  for (const auto& [row, col] : gemm_check_points(s)) {
    const size_t offset = (static_cast<size_t>(row) + static_cast<size_t>(col) * s.m) * t.cd_size;
    SHARDPLAN_CUDA(watchdog, cudaMemcpy(value.data(), static_cast<unsigned char*>(r.d) + offset,
                                        t.cd_size, cudaMemcpyDeviceToHost));
    wrong += !gemm_output_ok(s, row, col, decode_output(value.data(), s.dtype));
  }
  return wrong;
}

// Warm-up, then `iters` GEMMs per GPU, all GPUs in flight together; the intervals between the
// events recorded after each, per GPU.
std::vector<std::vector<double>> time_gemms(const std::vector<std::unique_ptr<Run>>& runs,
                                            const std::function<void(Run&)>& matmul,
                                            const std::string& what, int warmup, int iters,
                                            Watchdog& watchdog) {
  std::deque<Timeline> timelines;
  for (auto& r : runs) {
    SHARDPLAN_CUDA(watchdog, cudaSetDevice(r->gpu.device));
    for (int w = 0; w < warmup; ++w) matmul(*r);
    Timeline& line = timelines.emplace_back(watchdog, r->gpu.device, r->gpu.stream, iters);
    line.mark(0);
    for (int it = 1; it <= iters; ++it) {
      matmul(*r);
      line.mark(it);
    }
  }
  for (int it = 1; it <= iters; ++it) {
    watchdog.wait(
        [&] {
          bool all = true;
          for (Timeline& line : timelines) all = line.reached(it) && all;
          return all;
        },
        fmt::format("{}, iteration {}", what, it), __FILE__, __LINE__);
  }
  std::vector<std::vector<double>> intervals;
  for (Timeline& line : timelines) intervals.push_back(line.intervals_s());
  return intervals;
}

}  // namespace

std::vector<RankTiming> CublasLtGemm::run(const std::vector<GemmGpu>& gpus, const GemmShape& s,
                                          int warmup, int iters) {
  const Types t = types_of(s.dtype);
  const std::string what =
      fmt::format("cublasLtMatmul {}x{}x{} {}", s.m, s.n, s.k, to_string(s.dtype));
  const auto a_host = encode_inputs(0, s.k * s.m, s.dtype);
  const auto b_host = encode_inputs(1, s.k * s.n, s.dtype);
  std::vector<std::unique_ptr<Run>> runs;
  std::vector<RankTiming> out(gpus.size());
  for (size_t g = 0; g < gpus.size(); ++g) {
    auto run = std::make_unique<Run>();
    Run& r = *run;
    r.gpu = gpus[g];
    Handle& h = handle(r.gpu.device);
    SHARDPLAN_CUDA(watchdog_, cudaSetDevice(r.gpu.device));
    SHARDPLAN_CUDA(watchdog_, cudaMalloc(&r.a, a_host.size()));
    SHARDPLAN_CUDA(watchdog_, cudaMalloc(&r.b, b_host.size()));
    SHARDPLAN_CUDA(watchdog_, cudaMalloc(&r.d, static_cast<size_t>(s.m) * s.n * t.cd_size));
    // On the GPU's stream, so the GEMMs after them wait for them (see backend_nccl.cpp).
    SHARDPLAN_CUDA(watchdog_, cudaMemcpyAsync(r.a, a_host.data(), a_host.size(),
                                              cudaMemcpyHostToDevice, r.gpu.stream));
    SHARDPLAN_CUDA(watchdog_, cudaMemcpyAsync(r.b, b_host.data(), b_host.size(),
                                              cudaMemcpyHostToDevice, r.gpu.stream));
    r.ok = describe_gemm(r, t, s, h.lt, watchdog_);
    out[g].rank = r.gpu.rank;
    out[g].detail = r.ok ? fmt::format("cublasLtMatmul {}", to_string(s.dtype))
                         : fmt::format(
                               "unsupported: cuBLASLt has no {} kernel for {}x{}x{} on "
                               "this GPU (FP8 needs dimensions that are multiples of 16)",
                               to_string(s.dtype), s.m, s.n, s.k);
    if (!r.ok) return out;  // no iterations: the harness notes the shape and moves on
    runs.push_back(std::move(run));
  }
  const float alpha = 1.0f, beta = 0.0f;
  auto matmul = [&](Run& r) {
    const Handle& h = handle(r.gpu.device);
    const cublasStatus_t status =
        cublasLtMatmul(h.lt, r.op, &alpha, r.a, r.la, r.b, r.lb, &beta, r.d, r.ld, r.d, r.ld,
                       &r.algo.algo, h.workspace, kWorkspaceBytes, r.gpu.stream);
    if (status != CUBLAS_STATUS_SUCCESS) {
      watchdog_.fire(what, __FILE__, __LINE__,
                     fmt::format("cublasLtMatmul failed with status {}", static_cast<int>(status)));
    }
  };
  const auto intervals = time_gemms(runs, matmul, what, warmup, iters, watchdog_);
  for (size_t g = 0; g < runs.size(); ++g) {
    out[g].iteration_s = intervals[g];
    out[g].wrong = wrong_outputs(*runs[g], t, s, watchdog_);
  }
  return out;
}

}  // namespace shardplan::probe
