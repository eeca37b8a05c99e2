// cuBLASLt GEMMs for the NCCL back-end. Inputs are gemm_formats.cpp's random-mantissa values,
// encoded on the host as bit patterns (no CUDA kernel or half-precision header is needed) and
// copied once per shape; FP8 follows the cublasLtMatmul rules (A transposed and B not, "TN";
// fp32 compute and scale types; per-tensor scale pointers, 1.0 here; C and D in bf16) with fast
// accumulation as Transformer Engine's forward GEMMs run it; MXFP8 and NVFP4 set the A and B
// scale modes to VEC32_UE8M0 / VEC16_UE4M3 with every block scale 1.0.
#include "gemm_cublaslt.hpp"

#include <cublasLt.h>
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>

#include "cuda_support.hpp"

namespace shardplan::probe {
namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;  // cuBLASLt workspace; 32 MiB suits Hopper

// The per-tensor FP8 scales (fp32 1.0 for A and B): static storage, so an asynchronous copy
// from it never reads a buffer that has gone.
constexpr float kUnitScales[2] = {1.0f, 1.0f};

struct Types {
  cudaDataType_t ab, cd;
  cublasComputeType_t compute;
};

Types types_of(const GemmFormat& f) {
  switch (f.dtype) {
    case MathDtype::fp4:
      return {CUDA_R_4F_E2M1, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case MathDtype::fp8:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case MathDtype::bf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case MathDtype::fp16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case MathDtype::tf32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
    case MathDtype::fp32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case MathDtype::fp64:
      break;  // refused by why_not before any buffer is made
  }
  return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F};
}

std::string status_text(const char* call, cublasStatus_t status) {
  return fmt::format("{} returned {} ({})", call, cublasLtGetStatusName(status),
                     cublasLtGetStatusString(status));
}

// One GPU's buffers and descriptors for one shape; released on destruction.
struct Run {
  GemmGpu gpu;
  void *a = nullptr, *b = nullptr, *d = nullptr;
  void *scale_a = nullptr, *scale_b = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulHeuristicResult_t algo{};
  ~Run() {
    cudaSetDevice(gpu.device);
    if (op) cublasLtMatmulDescDestroy(op);
    for (auto layout : {la, lb, ld}) {
      if (layout) cublasLtMatrixLayoutDestroy(layout);
    }
    for (void* p : {a, b, d, scale_a, scale_b}) cudaFree(p);
  }
};

// Waits, under the watchdog, until every run's stream has finished what was issued on it.
void wait_streams(const std::vector<std::unique_ptr<Run>>& runs, const std::string& what,
                  Watchdog& watchdog) {
  std::deque<Timeline> marks;
  for (const auto& r : runs) marks.emplace_back(watchdog, r->gpu.device, r->gpu.stream, 0).mark(0);
  watchdog.wait(
      [&] {
        bool all = true;
        for (Timeline& m : marks) all = m.reached(0) && all;
        return all;
      },
      what, __FILE__, __LINE__);
}

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

std::string CublasLtGemm::why_not(int cc, const GemmFormat& f) {
  if (f.min_compute_capability < 0) return std::string(f.why_not);
  if (cc >= f.min_compute_capability) return "";
  return fmt::format("{} (this GPU: compute capability {}.{})", f.why_not, cc / 10, cc % 10);
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
    const cublasStatus_t status = cublasLtCreate(&h->lt);
    if (status != CUBLAS_STATUS_SUCCESS) {
      watchdog_.fire("cublasLtCreate", __FILE__, __LINE__, status_text("cublasLtCreate", status));
    }
    SHARDPLAN_CUDA(watchdog_, cudaMalloc(&h->workspace, kWorkspaceBytes));
  }
  return *h;
}

namespace {

// The operation, the three layouts, the scales and cuBLASLt's first heuristic choice for one
// GPU's GEMM; "" when it can run, else the call that refused and its status.
std::string describe_gemm(Run& r, const GemmFormat& f, const GemmShape& s, cublasLtHandle_t lt,
                          Watchdog& watchdog) {
  const Types t = types_of(f);
  const uint64_t m = s.m, n = s.n, k = s.k;
  // A stored k x m and used transposed, B k x n, D m x n, all column-major.
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  cublasStatus_t status = cublasLtMatmulDescCreate(&r.op, t.compute, CUDA_R_32F);
  if (status != CUBLAS_STATUS_SUCCESS) return status_text("cublasLtMatmulDescCreate", status);
  auto set = [&](cublasLtMatmulDescAttributes_t attribute, const void* value, size_t size,
                 const char* name) {
    const cublasStatus_t st = cublasLtMatmulDescSetAttribute(r.op, attribute, value, size);
    return st == CUBLAS_STATUS_SUCCESS
               ? std::string()
               : status_text(fmt::format("cublasLtMatmulDescSetAttribute({})", name).c_str(), st);
  };
  std::string why = set(CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a), "TRANSA");
  if (why.empty()) why = set(CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b), "TRANSB");
  if (why.empty() && f.fast_accumulation) {
    const int8_t fast = 1;
    why = set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast), "FAST_ACCUM");
  }
  if (why.empty() && f.scaling == GemmScaling::per_tensor) {
    SHARDPLAN_CUDA(watchdog, cudaMalloc(&r.scale_a, sizeof(kUnitScales)));
    SHARDPLAN_CUDA(watchdog, cudaMemcpyAsync(r.scale_a, kUnitScales, sizeof(kUnitScales),
                                             cudaMemcpyHostToDevice, r.gpu.stream));
    const float* scale_a = static_cast<const float*>(r.scale_a);
    const float* scale_b = scale_a + 1;
    why = set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_a, sizeof(scale_a), "A_SCALE_POINTER");
    if (why.empty())
      why = set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_b, sizeof(scale_b), "B_SCALE_POINTER");
  }
  if (why.empty() && f.scaling == GemmScaling::per_block) {
    const cublasLtMatmulMatrixScale_t mode = f.block_size == 16
                                                 ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3
                                                 : CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
    const int one = static_cast<int>(encode_element(1.0, f.scale));  // 0x38 UE4M3, 0x7F UE8M0
    for (auto [ptr, outer] : {std::pair{&r.scale_a, s.m}, std::pair{&r.scale_b, s.n}}) {
      const size_t bytes = block_scale_bytes(outer, s.k, f.block_size);
      SHARDPLAN_CUDA(watchdog, cudaMalloc(ptr, bytes));
      SHARDPLAN_CUDA(watchdog, cudaMemsetAsync(*ptr, one, bytes, r.gpu.stream));
    }
    why = set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof(mode), "A_SCALE_MODE");
    if (why.empty())
      why = set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof(mode), "B_SCALE_MODE");
    if (why.empty())
      why = set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &r.scale_a, sizeof(r.scale_a),
                "A_SCALE_POINTER");
    if (why.empty())
      why = set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &r.scale_b, sizeof(r.scale_b),
                "B_SCALE_POINTER");
  }
  if (!why.empty()) return why;
  for (auto [layout, type, rows, cols, name] :
       {std::tuple{&r.la, t.ab, k, m, "A"}, std::tuple{&r.lb, t.ab, k, n, "B"},
        std::tuple{&r.ld, t.cd, m, n, "D"}}) {
    status = cublasLtMatrixLayoutCreate(layout, type, rows, cols, static_cast<int64_t>(rows));
    if (status != CUBLAS_STATUS_SUCCESS) {
      return status_text(fmt::format("cublasLtMatrixLayoutCreate({})", name).c_str(), status);
    }
  }
  cublasLtMatmulPreference_t pref = nullptr;
  status = cublasLtMatmulPreferenceCreate(&pref);
  if (status != CUBLAS_STATUS_SUCCESS) return status_text("cublasLtMatmulPreferenceCreate", status);
  const size_t workspace = kWorkspaceBytes;
  status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &workspace, sizeof(workspace));
  int found = 0;
  if (status != CUBLAS_STATUS_SUCCESS) {
    why = status_text("cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)", status);
  } else {
    status =
        cublasLtMatmulAlgoGetHeuristic(lt, r.op, r.la, r.lb, r.ld, r.ld, pref, 1, &r.algo, &found);
    if (status != CUBLAS_STATUS_SUCCESS) {
      why = status_text("cublasLtMatmulAlgoGetHeuristic", status);
    } else if (found == 0) {
      why = "cublasLtMatmulAlgoGetHeuristic found no algorithm";
    }
  }
  cublasLtMatmulPreferenceDestroy(pref);
  return why;
}

// Counts the checked outputs of one GPU's D that are not what the inputs imply.
int wrong_outputs(const Run& r, const GemmFormat& f, const GemmShape& s, Watchdog& watchdog) {
  const Encoding& out = output_encoding(f);
  const size_t size = static_cast<size_t>(out.bits() / 8);
  std::vector<unsigned char> value(size);
  SHARDPLAN_CUDA(watchdog, cudaSetDevice(r.gpu.device));
  int wrong = 0;
  for (const auto& [row, col] : gemm_check_points(s)) {
    const size_t offset = (static_cast<size_t>(row) + static_cast<size_t>(col) * s.m) * size;
    SHARDPLAN_CUDA(watchdog, cudaMemcpy(value.data(), static_cast<unsigned char*>(r.d) + offset,
                                        size, cudaMemcpyDeviceToHost));
    uint64_t bits = 0;
    for (size_t b = 0; b < size; ++b) bits |= static_cast<uint64_t>(value[b]) << (8 * b);
    wrong += !gemm_output_ok(s, row, col, decode_element(bits, out));
  }
  return wrong;
}

// `iters` GEMMs per GPU, all GPUs in flight together; the intervals between the events
// recorded after each, per GPU.
std::vector<std::vector<double>> time_gemms(const std::vector<std::unique_ptr<Run>>& runs,
                                            const std::function<void(Run&)>& matmul,
                                            const std::string& what, int iters,
                                            Watchdog& watchdog) {
  std::deque<Timeline> timelines;
  for (auto& r : runs) {
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
                                          const GemmTiming& timing) {
  const GemmFormat& f = gemm_format_of(s);
  const std::string what = fmt::format("cublasLtMatmul {}x{}x{} {}", s.m, s.n, s.k, f.name);
  const auto a_host = encode_inputs(f, 0, static_cast<size_t>(s.k) * s.m);
  const auto b_host = encode_inputs(f, 1, static_cast<size_t>(s.k) * s.n);
  const size_t d_bytes = static_cast<size_t>(s.m) * s.n * (output_encoding(f).bits() / 8);
  std::vector<std::unique_ptr<Run>> runs;
  std::vector<RankTiming> out(gpus.size());
  std::string refused;
  for (size_t g = 0; g < gpus.size(); ++g) {
    auto run = std::make_unique<Run>();
    Run& r = *run;
    r.gpu = gpus[g];
    Handle& h = handle(r.gpu.device);
    SHARDPLAN_CUDA(watchdog_, cudaSetDevice(r.gpu.device));
    SHARDPLAN_CUDA(watchdog_, cudaMalloc(&r.a, a_host.size()));
    SHARDPLAN_CUDA(watchdog_, cudaMalloc(&r.b, b_host.size()));
    SHARDPLAN_CUDA(watchdog_, cudaMalloc(&r.d, d_bytes));
    // On the GPU's stream, so the GEMMs after them wait for them (see backend_nccl.cpp); the host
    // vectors stay untouched until wait_streams below has seen the copies finish.
    SHARDPLAN_CUDA(watchdog_, cudaMemcpyAsync(r.a, a_host.data(), a_host.size(),
                                              cudaMemcpyHostToDevice, r.gpu.stream));
    SHARDPLAN_CUDA(watchdog_, cudaMemcpyAsync(r.b, b_host.data(), b_host.size(),
                                              cudaMemcpyHostToDevice, r.gpu.stream));
    const std::string why = describe_gemm(r, f, s, h.lt, watchdog_);
    out[g].rank = r.gpu.rank;
    out[g].detail = fmt::format("cublasLtMatmul {}{}", f.name,
                                f.fast_accumulation ? ", fast accumulation" : "");
    if (!why.empty() && refused.empty()) {
      refused = fmt::format("unsupported: {} for {} {}x{}x{} on GPU {} (compute capability {}.{})",
                            why, f.name, s.m, s.n, s.k, r.gpu.device, r.gpu.compute_capability / 10,
                            r.gpu.compute_capability % 10);
    }
    runs.push_back(std::move(run));
  }
  wait_streams(runs, what + ", input copies", watchdog_);
  if (!refused.empty()) {
    // Every GPU's entry says so, with no iterations: the harness notes the shape and moves on.
    for (RankTiming& t : out) t.detail = refused;
    return out;
  }
  const float alpha = 1.0f, beta = 0.0f;
  auto matmul = [&](Run& r) {
    const Handle& h = handle(r.gpu.device);
    const cublasStatus_t status =
        cublasLtMatmul(h.lt, r.op, &alpha, r.a, r.la, r.b, r.lb, &beta, r.d, r.ld, r.d, r.ld,
                       &r.algo.algo, h.workspace, kWorkspaceBytes, r.gpu.stream);
    if (status != CUBLAS_STATUS_SUCCESS) {
      watchdog_.fire(what, __FILE__, __LINE__, status_text("cublasLtMatmul", status));
    }
  };
  // The warm-up on every GPU at once, timed on the host around a full synchronisation.
  const double per_call = warm_up(timing, [&](int calls) {
    const auto start = std::chrono::steady_clock::now();
    for (auto& r : runs) {
      SHARDPLAN_CUDA(watchdog_, cudaSetDevice(r->gpu.device));
      for (int c = 0; c < calls; ++c) matmul(*r);
    }
    wait_streams(runs, what + ", warm-up", watchdog_);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  const int iters = timed_iterations(timing, per_call);
  const auto intervals = time_gemms(runs, matmul, what, iters, watchdog_);
  for (size_t g = 0; g < runs.size(); ++g) {
    out[g].iteration_s = intervals[g];
    out[g].wrong = wrong_outputs(*runs[g], f, s, watchdog_);
  }
  return out;
}

}  // namespace shardplan::probe
