// The fitted constants as a table of knobs, their fitting procedure, and leave-one-source-group-
// out cross-validation with intervals from the held-out residuals.
#include "shardplan/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "shardplan/error.hpp"
#include "shardplan/framework.hpp"
#include "shardplan/parallel.hpp"

namespace shardplan {
namespace {

bool is_step_metric(Metric m) { return m != Metric::activations_gib; }

// Every step-time case fits the step model: the constants are shared by all of them, and
// cross-validation leaves each source group out of the fit that predicts it.
bool fits_step(const PublishedRun& r) { return is_step_metric(r.metric); }

void scale_gemm(GpuSpec& g, double k) {
  for (EfficiencyPoint& p : g.gemm_efficiency) p.efficiency = std::min(0.99, p.efficiency * k);
}

double* kernel_speed_of(FrameworkPricing& p, const std::string& cls) {
  for (auto& [c, s] : p.kernel_speed_by_gpu)
    if (c == cls) return &s;
  return nullptr;
}

const std::string& framework_of(const PublishedRun& r) { return r.training.framework.name; }
const std::string& class_of(const PublishedRun& r) { return r.cluster.gpu.accuracy_class; }

const auto kAll = [](const PublishedRun& r) { return fits_step(r); };
const auto kAny = [](const PublishedRun&) { return true; };

// How far a framework's speed on one GPU class may stray from its speed on every class before
// the data must pay for it (one standard deviation of log speed): the prior that shrinks a class
// with few runs toward its framework, and that a held-out class falls back to.
constexpr double kClassSigma = 0.1;
// The same for a framework's speed against Megatron-LM's fused kernels (speed 1).
constexpr double kFrameworkSigma = 0.3;
// The fixed costs per layer: a weak prior around the profiles' estimates (100 us a layer, 300 us
// more a MoE layer; profiles/frameworks kernels.layer_fixed_us).
constexpr double kFixedSigma = 1.0;
constexpr double kLayerFixedPrior = 100e-6, kMoeLayerFixedPrior = 300e-6;
// fp8 and fp4 GEMMs against their MAMF share (gemm_dtype_share): MAMF is the best a shape sweep
// reaches, so a step's low-precision GEMMs are priced at it unless the data pays to move them.
// One kernel's fp8 GEMMs at m = 4096 span 775 to 1520 TFLOP/s across the shapes of one model
// (DeepGEMM README @327ec92, H800, DeepSeek-V3 shapes): far wider than +-15% around one MAMF
// ratio. Of the spreads 15%, 30% and 50%, 30% ordered the most plan pairs as measured, its
// held-out mean 0.2 pt from the best (docs/design.md, calibration).
constexpr double kLowPrecisionSigma = 0.3;
// The power-limited part's prior: B200 at a 750 W cap reaches 2.0x an H100 where GB200 at 1200 W
// reaches 2.8x (pytorch/FBGEMM PR #4197): speed ~ power^0.716, and (500 / 700)^0.716 = 0.786
// (profiles/gpus/h100-96gb-500w.json power_derate).
constexpr const char* kGrandTeton = "H100-96GB-500W";
constexpr double kGrandTetonPrior = 0.786;

Knob gpu_knob(std::string name, std::string figure, std::function<void(GpuSpec&, double)> edit) {
  Knob k;
  k.name = std::move(name);
  k.figure = std::move(figure);
  k.trains = kAll;
  k.applies = kAny;
  k.on_gpu = std::move(edit);
  return k;
}

Knob stack_knob(std::string name, std::string figure, std::string framework,
                const std::function<bool(const PublishedRun&)>& applies,
                std::function<void(FrameworkPricing&, double)> edit) {
  Knob k;
  k.name = std::move(name);
  k.figure = std::move(figure);
  k.applies = applies;
  k.trains = [applies](const PublishedRun& r) { return fits_step(r) && applies(r); };
  k.framework_name = std::move(framework);
  k.on_stack = std::move(edit);
  return k;
}

// A GEMM share of every GPU profile (`factor`) that only the runs whose GEMMs run in one of
// `dtypes` pay: fitted on those, pulled toward the profile's figure by kLowPrecisionSigma.
Knob gemm_dtype_knob(std::string name, std::string figure, std::vector<MathDtype> dtypes,
                     double GpuSpec::*factor) {
  const auto runs_in = [dtypes = std::move(dtypes)](const PublishedRun& r) {
    return std::find(dtypes.begin(), dtypes.end(), r.training.recipe.gemm_dtype) != dtypes.end();
  };
  Knob k = gpu_knob(std::move(name), std::move(figure),
                    [factor](GpuSpec& g, double m) { g.*factor *= m; });
  k.trains = [runs_in](const PublishedRun& r) { return fits_step(r) && runs_in(r); };
  k.applies = runs_in;
  k.prior_sigma = kLowPrecisionSigma;
  k.prior = [factor](const PublishedRun& r) { return 1.0 / (r.cluster.gpu.*factor); };
  return k;
}

// The knobs every corpus has: hardware terms and fixed costs.
std::vector<Knob> shared_knobs() {
  std::vector<Knob> k;
  // Hardware terms every case shares: the share of MAMF GEMMs reach inside a step (0.84 in
  // every GPU profile's gemm_efficiency), the memory-bound kernels' share of HBM (0.72) and the
  // fused attention kernels' level (attention_efficiency). No prior: every case informs them.
  k.push_back(gpu_knob("gemm_share_of_mamf",
                       "every GPU profile's gemm_efficiency curve (e_max = 0.84 x MAMF / peak)",
                       [](GpuSpec& g, double m) { scale_gemm(g, m); }));
  k.push_back(gpu_knob("memory_kernel_efficiency", "every GPU profile's memory_efficiency (0.72)",
                       [](GpuSpec& g, double m) { g.memory_efficiency *= m; }));
  k.push_back(gpu_knob("attention_share",
                       "every GPU profile's attention_efficiency (the curve's level)",
                       [](GpuSpec& g, double m) {
                         g.attention_efficiency = std::min(0.95, g.attention_efficiency * m);
                       }));
  // fp8 and fp4 GEMMs against the MAMF-derived share of their peaks (gemm_dtype_share): the
  // GEMMs of a low-precision step also quantize, scale and run smaller tiles than a best-shape
  // sweep. Fitted on every case whose recipe runs its GEMMs in 8 or 4 bits.
  k.push_back(gemm_dtype_knob("low_precision_gemm_share",
                              "the share of gemm_dtype_share fp8 and fp4 (MAMF fp8 / bf16 "
                              "fractions) a step's GEMMs reach",
                              {MathDtype::fp8, MathDtype::fp4},
                              &GpuSpec::low_precision_gemm_factor));
  // fp4 GEMMs against fp8's share: NVFP4 scales every 16 elements (MXFP8: 32) under a second,
  // per-tensor fp32 scale, so one share for both made the fp4 steps too slow (nvfp4 held out:
  // median -14.5%, 17 of 18 too slow). Fitted on every case whose GEMMs run in 4 bits; 1 (fp8's
  // share) without them.
  k.push_back(gemm_dtype_knob("fp4_gemm_share",
                              "the share fp4 GEMMs reach beside fp8's low_precision_gemm_share",
                              {MathDtype::fp4}, &GpuSpec::fp4_gemm_factor));
  // Fixed costs per layer and micro-batch (the same in every framework profile).
  Knob layer = stack_knob("layer_fixed_cost", "every framework profile's kernels.layer_fixed_us",
                          "", kAny, [](FrameworkPricing& p, double m) { p.layer_fixed_s *= m; });
  layer.trains = kAll;
  layer.prior = [](const PublishedRun& r) {
    return kLayerFixedPrior / r.training.framework.pricing.layer_fixed_s;
  };
  layer.prior_sigma = kFixedSigma;
  k.push_back(layer);
  Knob moe = stack_knob(
      "moe_layer_fixed_cost", "every framework profile's kernels.moe_layer_fixed_us", "",
      [](const PublishedRun& r) { return r.model.experts > 0; },
      [](FrameworkPricing& p, double m) { p.moe_layer_fixed_s *= m; });
  moe.prior = [](const PublishedRun& r) {
    return kMoeLayerFixedPrior / r.training.framework.pricing.moe_layer_fixed_s;
  };
  moe.prior_sigma = kFixedSigma;
  k.push_back(moe);
  return k;
}

// The terms of one stack or one part: DeepSpeed's pipeline engine and ZeRO-3 shares, the 500 W
// H100's power derate, Megatron-Core's 16-bit grouped GEMMs and its CUDA graphs.
std::vector<Knob> one_stack_knobs() {
  std::vector<Knob> k;
  // DeepSpeed's pipeline engine against Megatron-LM's (deepspeed kernels.pipeline_engine 0.78),
  // fitted on MT-NLG 530B on 2,240 A100s; unfitted it is Megatron-LM's speed (1).
  Knob pipe = stack_knob(
      "deepspeed_pipeline_engine_speed",
      "profiles/frameworks/deepspeed.json kernels.pipeline_engine.speed", "deepspeed",
      [](const PublishedRun& r) {
        return r.training.framework.name == "deepspeed" && r.plan.pp > 1;
      },
      [](FrameworkPricing& p, double m) { p.pipeline_engine_speed *= m; });
  pipe.prior = [](const PublishedRun& r) {
    return 1.0 / r.training.framework.pricing.pipeline_engine_speed;
  };
  k.push_back(pipe);
  // DeepSpeed ZeRO-3's effective bus-bandwidth share at each fitted group size (deepspeed
  // collectives.sharded_data_parallel.busbw_share), each fitted on its Narayanan et al. 2021
  // Table 2 row; unfitted the share is 1 (the link's nccl-tests busbw).
  for (size_t i = 0; i < 2; ++i) {
    const auto zero3 = [](const PublishedRun& r) {
      return r.training.framework.name == "deepspeed" && r.plan.zero == 3;
    };
    Knob z = stack_knob(i == 0 ? "deepspeed_zero3_share_384" : "deepspeed_zero3_share_768",
                        "profiles/frameworks/deepspeed.json busbw_share point " +
                            std::to_string(i + 1),
                        "deepspeed", zero3, [i](FrameworkPricing& p, double m) {
                          auto& pts = p.zero3_busbw.points;
                          if (i < pts.size()) pts[i].second = std::min(1.0, pts[i].second * m);
                        });
    z.trains = [zero3, i](const PublishedRun& r) {
      const auto& pts = r.training.framework.pricing.zero3_busbw.points;
      return zero3(r) && fits_step(r) && i < pts.size() &&
             r.cluster.gpus == static_cast<int>(pts[i].first);
    };
    z.prior = [i](const PublishedRun& r) {
      const auto& pts = r.training.framework.pricing.zero3_busbw.points;
      return i < pts.size() ? 1.0 / pts[i].second : 1.0;
    };
    k.push_back(z);
  }
  // The Grand Teton H100 at 500 W: one factor on its GEMM, attention and memory efficiencies
  // against the H100 SXM at 700 W (its power cap lowers the clocks), fitted on every case run
  // on it beside the stack terms of the frameworks those cases ran; prior kGrandTetonPrior.
  Knob part = gpu_knob("h100_500w_part_factor",
                       "profiles/gpus/h100-96gb-500w.json power_derate (of the H100 SXM's "
                       "efficiencies)",
                       [](GpuSpec& g, double m) {
                         scale_gemm(g, m);
                         g.attention_efficiency *= m;
                         g.memory_efficiency *= m;
                         g.power_derate *= m;
                       });
  part.gpu_name = kGrandTeton;
  part.trains = [](const PublishedRun& r) {
    return fits_step(r) && r.cluster.gpu.name == kGrandTeton;
  };
  part.applies = [](const PublishedRun& r) { return r.cluster.gpu.name == kGrandTeton; };
  part.prior = [](const PublishedRun& r) {
    return kGrandTetonPrior / r.cluster.gpu.power_derate;
  };
  part.prior_sigma = kClassSigma;
  k.push_back(part);
  // Megatron-Core's 16-bit grouped GEMMs (Transformer Engine's GroupedLinear) against a dense
  // GEMM of one expert's size, fitted on its MoE runs (their layers kept in 16 bits under an fp8
  // or fp4 recipe price it too); prior 1, as loose as a framework's speed.
  Knob grouped = stack_knob(
      "megatron_grouped_16bit_gemm_share",
      "profiles/frameworks/megatron.json kernels.grouped_gemm_16bit_share", "megatron",
      [](const PublishedRun& r) { return framework_of(r) == "megatron" && r.model.experts > 0; },
      [](FrameworkPricing& p, double m) { p.grouped_gemm_16bit_share *= m; });
  grouped.prior = [](const PublishedRun& r) {
    return 1.0 / r.training.framework.pricing.grouped_gemm_16bit_share;
  };
  grouped.prior_sigma = kFrameworkSigma;
  k.push_back(grouped);
  // The share of Megatron-Core's fixed costs per layer left under CUDA graphs, per scope, fitted
  // on the runs whose recipes state their graphs; prior 1 (graphs save nothing), as loose as the
  // fixed costs themselves.
  for (const CudaGraphs graphs : {CudaGraphs::scoped, CudaGraphs::full}) {
    const bool scoped = graphs == CudaGraphs::scoped;
    Knob g = stack_knob(
        scoped ? "megatron_cuda_graph_scoped_fixed_share" : "megatron_cuda_graph_full_fixed_share",
        std::string("profiles/frameworks/megatron.json kernels.cuda_graph_fixed_share.") +
            (scoped ? "scoped" : "full"),
        "megatron",
        [graphs](const PublishedRun& r) {
          return framework_of(r) == "megatron" && r.training.cuda_graphs == graphs;
        },
        [scoped](FrameworkPricing& p, double m) {
          (scoped ? p.cuda_graph_scoped_fixed_share : p.cuda_graph_full_fixed_share) *= m;
        });
    g.prior = [graphs](const PublishedRun& r) {
      return 1.0 / r.training.framework.pricing.fixed_share(graphs);
    };
    g.prior_sigma = kFixedSigma;
    k.push_back(g);
  }
  return k;
}

// The software stack apart from the hardware: a framework's speed against Megatron-LM's fused
// kernels (kernels.speed; prior 1) ...
Knob framework_knob(const std::string& fw) {
  Knob f = stack_knob(
      "stack " + fw, "profiles/frameworks/" + fw + ".json kernels.speed (and speed_by_gpu)", fw,
      [fw](const PublishedRun& r) { return framework_of(r) == fw; },
      [](FrameworkPricing& p, double m) {
        p.kernel_speed *= m;
        for (auto& [cls, s] : p.kernel_speed_by_gpu) s *= m;
      });
  f.prior = [](const PublishedRun& r) { return 1.0 / r.training.framework.pricing.kernel_speed; };
  f.prior_sigma = kFrameworkSigma;
  return f;
}

// ... and its speed on each GPU class against its speed on all (kernels.speed_by_gpu; prior:
// the framework's own).
Knob class_knob(const std::string& fw, const std::string& cls) {
  Knob c = stack_knob(
      "stack " + fw + " x " + cls,
      "profiles/frameworks/" + fw + ".json kernels.speed_by_gpu " + cls, fw,
      [fw, cls](const PublishedRun& r) { return framework_of(r) == fw && class_of(r) == cls; },
      [cls](FrameworkPricing& p, double m) {
        if (double* s = kernel_speed_of(p, cls)) {
          *s *= m;
        } else {
          p.kernel_speed_by_gpu.emplace_back(cls, p.kernel_speed * m);
        }
      });
  c.prior = [cls](const PublishedRun& r) {
    FrameworkPricing p = r.training.framework.pricing;
    const double* s = kernel_speed_of(p, cls);
    return s ? p.kernel_speed / *s : 1.0;
  };
  c.prior_sigma = kClassSigma;
  return c;
}

// The frameworks and (framework, GPU class) pairs the corpus has step cases of, in order.
std::vector<std::string> frameworks_in(const std::vector<PublishedRun>& runs) {
  std::vector<std::string> out;
  for (const PublishedRun& r : runs)
    if (fits_step(r) && !framework_of(r).empty() && framework_of(r) != "megatron" &&
        std::find(out.begin(), out.end(), framework_of(r)) == out.end())
      out.push_back(framework_of(r));
  return out;
}

std::vector<std::pair<std::string, std::string>> stacks_in(const std::vector<PublishedRun>& runs) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const PublishedRun& r : runs) {
    const std::pair<std::string, std::string> key{framework_of(r), class_of(r)};
    if (fits_step(r) && !key.first.empty() && !key.second.empty() &&
        std::find(out.begin(), out.end(), key) == out.end())
      out.push_back(key);
  }
  return out;
}

std::vector<Knob> make_knobs(const std::vector<PublishedRun>& corpus) {
  std::vector<Knob> k = shared_knobs();
  for (const std::string& fw : frameworks_in(corpus)) k.push_back(framework_knob(fw));
  for (const auto& [fw, cls] : stacks_in(corpus)) k.push_back(class_knob(fw, cls));
  for (Knob& one : one_stack_knobs()) k.push_back(std::move(one));
  return k;
}

double log_error(const PublishedRun& run) {
  const Prediction p = predict(run);
  if (p.predicted <= 0 || run.measured <= 0) return 10;
  // Slower is positive: a time's error as it is, a throughput's inverted.
  const double e = std::log(p.predicted / run.measured);
  return run.metric == Metric::iteration_time_s || run.metric == Metric::layer_fwd_bwd_ms ? e
                                                                                          : -e;
}

// Solves the symmetric positive-definite system a x = b (Cholesky); false if it is not.
bool solve_spd(std::vector<double> a, std::vector<double> b, size_t n, std::vector<double>* x) {
  for (size_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (size_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (d <= 0) return false;
    a[j * n + j] = std::sqrt(d);
    for (size_t i = j + 1; i < n; ++i) {
      double v = a[i * n + j];
      for (size_t k = 0; k < j; ++k) v -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = v / a[j * n + j];
    }
  }
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < i; ++k) b[i] -= a[i * n + k] * b[k];
    b[i] /= a[i * n + i];
  }
  for (size_t i = n; i-- > 0;) {
    for (size_t k = i + 1; k < n; ++k) b[i] -= a[k * n + i] * b[k];
    b[i] /= a[i * n + i];
  }
  *x = std::move(b);
  return true;
}

double quantile(std::vector<std::pair<double, double>> weighted, double q) {
  std::sort(weighted.begin(), weighted.end());
  double total = 0;
  for (const auto& [v, w] : weighted) total += w;
  double acc = 0;
  for (const auto& [v, w] : weighted) {
    acc += w;
    if (acc >= q * total) return v;
  }
  return weighted.empty() ? 0 : weighted.back().first;
}

std::string percent(double x) { return fmt::format("{:+.1f}%", x * 100); }

}  // namespace

std::shared_ptr<const Knob> knob_named(const std::string& name) {
  static const std::vector<Knob> fixed = [] {
    std::vector<Knob> k = shared_knobs();
    for (Knob& one : one_stack_knobs()) k.push_back(std::move(one));
    return k;
  }();
  for (const Knob& k : fixed)
    if (k.name == name) return std::make_shared<const Knob>(k);
  const std::string prefix = "stack ";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return nullptr;
  const std::string rest = name.substr(prefix.size());
  const size_t x = rest.find(" x ");
  if (x == std::string::npos) return std::make_shared<const Knob>(framework_knob(rest));
  return std::make_shared<const Knob>(class_knob(rest.substr(0, x), rest.substr(x + 3)));
}

void apply_fitted(const FittedConstants& fit, GpuSpec& gpu) {
  if (gpu.calibrated) return;  // measured on the cluster: nothing fitted elsewhere replaces it
  for (const FittedConstant& c : fit.constants) {
    const Knob* k = c.knob.get();
    if (k && k->on_gpu && (k->gpu_name.empty() || k->gpu_name == gpu.name))
      k->on_gpu(gpu, c.multiplier);
  }
}

void apply_fitted(const FittedConstants& fit, const std::string& framework, FrameworkPricing& p) {
  for (const FittedConstant& c : fit.constants) {
    const Knob* k = c.knob.get();
    if (k && k->on_stack && (k->framework_name.empty() || k->framework_name == framework))
      k->on_stack(p, c.multiplier);
  }
}

FittedConstants compose(const FittedConstants& shipped, const std::vector<KnobFit>& fit,
                        const std::string& source, const std::string& procedure) {
  FittedConstants out;
  out.source = source;
  out.procedure = procedure;
  for (const KnobFit& f : fit) {
    FittedConstant c{f.name, f.multiplier, f.cases, f.knob};
    for (const FittedConstant& s : shipped.constants)
      if (s.name == f.name) c.multiplier *= s.multiplier;
    out.constants.push_back(c);
  }
  // A shipped constant this corpus has no knob for (a stack no run of it uses) stays as shipped.
  for (const FittedConstant& s : shipped.constants) {
    const bool fitted = std::any_of(fit.begin(), fit.end(),
                                    [&](const KnobFit& f) { return f.name == s.name; });
    if (!fitted) out.constants.push_back(s);
  }
  return out;
}

namespace {

// A knob as a row of a fit, at multiplier 1.
KnobFit fit_row(Knob k) {
  KnobFit f;
  f.name = k.name;
  f.figure = k.figure;
  f.knob = std::make_shared<const Knob>(std::move(k));
  return f;
}

}  // namespace

std::vector<KnobFit> knob_table(const std::vector<PublishedRun>& corpus) {
  std::vector<KnobFit> out;
  for (Knob& k : make_knobs(corpus)) out.push_back(fit_row(std::move(k)));
  return out;
}

PublishedRun with_knobs(PublishedRun run, const std::vector<KnobFit>& fit) {
  for (const KnobFit& f : fit) {
    if (f.multiplier == 1 || !f.knob || !f.knob->applies(run)) continue;
    if (f.knob->on_gpu) f.knob->on_gpu(run.cluster.gpu, f.multiplier);
    if (f.knob->on_stack) f.knob->on_stack(run.training.framework.pricing, f.multiplier);
  }
  return run;
}

std::vector<PublishedRun> with_step_ratios(std::vector<PublishedRun> runs, StepModel step) {
  parallel_for(runs.size(), 0, [&](size_t /*worker*/, size_t i) {
    PublishedRun& r = runs[i];
    if (r.simulated_step_ratio > 0) return;
    r.simulated_step_ratio = step == StepModel::simulated ? predict(r).step_ratio : 1.0;
  });
  return runs;
}

namespace {

// The weighted least-squares problem of one fit: each training run's log error, weighing
// 1 / sqrt(its group's cases) (a table of 70 rows counts more than one row, not 70 times
// more), with a Huber weight beyond kHuber so one broken row cannot drag a shared constant;
// and each knob's prior, (log m - log prior)^2 x (kResidualSigma / sigma)^2.
constexpr double kHuber = 0.3;
constexpr double kResidualSigma = 0.15;  // the spread of a good prediction's log error
constexpr double kStep = 0.01;           // finite-difference step in log m

struct Problem {
  std::vector<const PublishedRun*> runs;     // training runs
  std::vector<double> weight;                // per run, before the Huber factor
  std::vector<double> prior_log;             // per knob
  std::vector<double> prior_weight;          // per knob (0: no prior)
  std::vector<std::vector<size_t>> touches;  // per knob, the training runs it applies to
};

std::vector<double> errors(const Problem& p, const std::vector<KnobFit>& fit) {
  std::vector<double> e(p.runs.size());
  for (size_t i = 0; i < p.runs.size(); ++i) e[i] = log_error(with_knobs(*p.runs[i], fit));
  return e;
}

double huber_weight(double e) { return std::fabs(e) <= kHuber ? 1.0 : kHuber / std::fabs(e); }

double objective(const Problem& p, const std::vector<KnobFit>& fit, const std::vector<double>& e,
                 const std::vector<double>& hw) {
  double f = 0;
  for (size_t i = 0; i < e.size(); ++i) f += p.weight[i] * hw[i] * e[i] * e[i];
  for (size_t j = 0; j < fit.size(); ++j) {
    const double d = std::log(fit[j].multiplier) - p.prior_log[j];
    f += p.prior_weight[j] * d * d;
  }
  return f;
}

// Levenberg-Marquardt on log m over the knobs that have training runs, the Huber weights
// refreshed each iteration (iteratively reweighted least squares).
void levenberg_marquardt(const Problem& p, std::vector<KnobFit>& fit, int iterations) {
  std::vector<size_t> free;
  for (size_t j = 0; j < fit.size(); ++j)
    if (fit[j].cases > 0) free.push_back(j);
  const size_t n = free.size();
  if (n == 0 || p.runs.empty()) return;
  std::vector<double> e = errors(p, fit);
  double damping = 1e-3;
  for (int it = 0; it < iterations; ++it) {
    std::vector<double> hw(e.size());
    for (size_t i = 0; i < e.size(); ++i) hw[i] = huber_weight(e[i]);
    const double f0 = objective(p, fit, e, hw);
    // Jacobian of the errors in log m, by forward differences over the runs each knob touches.
    std::vector<std::vector<double>> jac(n, std::vector<double>(e.size(), 0.0));
    for (size_t a = 0; a < n; ++a) {
      const size_t j = free[a];
      std::vector<KnobFit> moved = fit;
      moved[j].multiplier *= std::exp(kStep);
      for (size_t i : p.touches[j])
        jac[a][i] = (log_error(with_knobs(*p.runs[i], moved)) - e[i]) / kStep;
    }
    std::vector<double> jtj(n * n, 0.0), g(n, 0.0);
    for (size_t a = 0; a < n; ++a) {
      const size_t j = free[a];
      for (size_t i : p.touches[j]) g[a] += p.weight[i] * hw[i] * jac[a][i] * e[i];
      for (size_t b = 0; b <= a; ++b) {
        double v = 0;
        for (size_t i : p.touches[j]) v += p.weight[i] * hw[i] * jac[a][i] * jac[b][i];
        jtj[a * n + b] = jtj[b * n + a] = v;
      }
      jtj[a * n + a] += p.prior_weight[j];
      g[a] += p.prior_weight[j] * (std::log(fit[j].multiplier) - p.prior_log[j]);
    }
    bool improved = false;
    for (int tries = 0; tries < 8 && !improved; ++tries) {
      std::vector<double> a = jtj, delta;
      for (size_t q = 0; q < n; ++q) a[q * n + q] += damping * (1.0 + jtj[q * n + q]);
      std::vector<double> rhs(n);
      for (size_t q = 0; q < n; ++q) rhs[q] = -g[q];
      if (!solve_spd(a, rhs, n, &delta)) {
        damping *= 10;
        continue;
      }
      std::vector<KnobFit> trial = fit;
      double largest = 0;
      for (size_t q = 0; q < n; ++q) {
        const double step = std::clamp(delta[q], -0.5, 0.5);
        largest = std::max(largest, std::fabs(step));
        trial[free[q]].multiplier =
            std::clamp(fit[free[q]].multiplier * std::exp(step), 1.0 / 20, 20.0);
      }
      std::vector<double> te = errors(p, trial);
      if (objective(p, trial, te, hw) < f0) {
        fit = std::move(trial);
        e = std::move(te);
        damping = std::max(1e-6, damping / 4);
        improved = true;
        if (largest < 1e-3) return;
      } else {
        damping *= 8;
      }
    }
    if (!improved) return;
  }
}

}  // namespace

std::vector<KnobFit> fit_knobs(const std::vector<PublishedRun>& given,
                               const std::vector<bool>& use, const std::vector<KnobFit>* start) {
  const std::vector<PublishedRun> runs = with_step_ratios(given, StepModel::simulated);
  std::vector<KnobFit> fit = start ? *start : knob_table(runs);
  Problem p;
  std::map<std::string, int> per_group;
  for (size_t i = 0; i < runs.size(); ++i)
    if (use[i] && fits_step(runs[i])) ++per_group[runs[i].source_group];
  std::vector<size_t> index(runs.size(), SIZE_MAX);
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!use[i] || !fits_step(runs[i])) continue;
    index[i] = p.runs.size();
    p.runs.push_back(&runs[i]);
    p.weight.push_back(1.0 / std::sqrt(per_group[runs[i].source_group]));
  }
  p.touches.resize(fit.size());
  for (size_t j = 0; j < fit.size(); ++j) {
    const Knob& k = *fit[j].knob;
    const PublishedRun* any = nullptr;
    int cases = 0;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (k.applies(runs[i]) && !any) any = &runs[i];
      if (index[i] != SIZE_MAX && k.applies(runs[i])) p.touches[j].push_back(index[i]);
      if (index[i] != SIZE_MAX && k.trains(runs[i])) ++cases;
    }
    fit[j].cases = cases;
    fit[j].prior_sigma = k.prior_sigma;
    fit[j].prior = any && k.prior ? k.prior(*any) : 1.0;
    p.prior_log.push_back(std::log(fit[j].prior));
    p.prior_weight.push_back(k.prior_sigma > 0 ? std::pow(kResidualSigma / k.prior_sigma, 2)
                                               : 0.0);
    // A constant no training run informs is its prior: the unfitted default, or the level of
    // the tier above it (a GPU class falls back to its framework's speed).
    if (cases == 0) fit[j].multiplier = fit[j].prior;
  }
  levenberg_marquardt(p, fit, start ? 4 : 16);
  return fit;
}

int free_parameters(const std::vector<KnobFit>& fit) {
  int n = 0;
  for (const KnobFit& f : fit) n += f.cases > 0 ? 1 : 0;
  return n;
}

bool step_residual(const Prediction& p, double* residual) {
  if (!p.run || !is_step_metric(p.run->metric) || p.predicted <= 0 || p.run->measured <= 0)
    return false;
  const bool is_time =
      p.run->metric == Metric::iteration_time_s || p.run->metric == Metric::layer_fwd_bwd_ms;
  // Throughput figures scale as 1 / step: measured step / predicted step = predicted / measured.
  *residual = is_time ? p.run->measured / p.predicted - 1 : p.predicted / p.run->measured - 1;
  return true;
}

std::string accuracy_class_of(const PublishedRun& run) {
  const std::string fw = run.training.framework.name.empty() ? "none" : run.training.framework.name;
  const std::string& g = run.cluster.gpu.accuracy_class;
  // Mixtures of experts are their own classes: their held-out errors are two to four times the
  // dense runs' on the same framework and GPU (megatron x H100: 48% against 11%), and one
  // interval for both held 75% of the MoE cases while spanning -47% to +89% for dense plans
  // whose errors stay under 28%.
  const bool moe = run.model.experts > 0;
  return fw + " " + accuracy_class_name(g.empty() ? run.cluster.gpu.name : g, moe);
}

namespace {

using Weighted = std::vector<std::pair<double, double>>;  // (|log(1 + residual)|, weight)

// The step cases that were (or were not) extrapolated, and how many each group has.
std::vector<const CvCase*> pool_of(const std::vector<CvCase>& cases, bool extrapolated,
                                   std::map<std::string, int>* per_group) {
  std::vector<const CvCase*> pool;
  for (const CvCase& c : cases) {
    if (!c.step || c.extrapolated != extrapolated) continue;
    pool.push_back(&c);
    ++(*per_group)[c.group];
  }
  return pool;
}

// The plan a run states, as validation's reach reads it.
PlanScope scope_of(const PublishedRun& run) {
  return plan_scope(run.model, run.training, run.plan, run.cluster);
}

double magnitude(const CvCase& c) { return std::fabs(std::log1p(c.residual)); }

// The split-conformal radius: the weighted quantile of |log(measured / predicted step)| at
// level x (n + 1) / n for the n exchangeable groups whose residuals it is taken over, so `level`
// of a new group's cases fall inside.
double conformal_radius(const Weighted& values, double groups, double level) {
  if (values.empty() || groups <= 0) return 0;
  return quantile(values, std::min(1.0, level * (groups + 1) / groups));
}

void set_ends(ClassInterval& ci, double radius) {
  ci.low = std::expm1(-radius);
  ci.high = std::expm1(radius);
}

}  // namespace

ClassInterval extrapolation_interval(const std::vector<CvCase>& cases, double level) {
  std::map<std::string, int> per_group, in_class_groups;
  std::vector<const CvCase*> pool = pool_of(cases, true, &per_group);
  const std::vector<const CvCase*> in_class = pool_of(cases, false, &in_class_groups);
  Weighted values, in_class_values;
  for (const CvCase* c : pool) values.emplace_back(magnitude(*c), 1.0 / per_group[c->group]);
  for (const CvCase* c : in_class)
    in_class_values.emplace_back(magnitude(*c), 1.0 / in_class_groups[c->group]);
  ClassInterval ci;
  ci.cls = "extrapolation";
  ci.cases = static_cast<int>(pool.size());
  ci.groups = static_cast<int>(per_group.size());
  // Never narrower than a plan inside the corpus gets.
  set_ends(ci, std::max(conformal_radius(values, ci.groups, level),
                        conformal_radius(in_class_values, in_class_groups.size(), level)));
  ci.basis = fmt::format(
      "{:.0f}% interval for a plan beyond the validation corpus: the cross-validated residuals "
      "of {} runs predicted beyond what their fold was fitted on, in {} source groups (each "
      "group weighing one): {} to {} (measured step against predicted)",
      level * 100, ci.cases, ci.groups, percent(ci.low), percent(ci.high));
  return ci;
}

ClassInterval pooled_interval(const std::vector<CvCase>& cases, double level) {
  std::map<std::string, int> per_group;
  const std::vector<const CvCase*> pool = pool_of(cases, false, &per_group);
  Weighted values;
  for (const CvCase* c : pool) values.emplace_back(magnitude(*c), 1.0 / per_group[c->group]);
  ClassInterval ci;
  ci.cls = "pooled";
  ci.cases = static_cast<int>(pool.size());
  ci.groups = static_cast<int>(per_group.size());
  set_ends(ci, conformal_radius(values, ci.groups, level));
  ci.basis = fmt::format(
      "{:.0f}% interval from every class's {} cross-validated residuals in {} source groups "
      "(this class's cases all come from one group): {} to {} (measured step against predicted)",
      level * 100, ci.cases, ci.groups, percent(ci.low), percent(ci.high));
  return ci;
}

std::vector<ClassInterval> class_intervals(const std::vector<CvCase>& cases, double level) {
  std::map<std::string, int> per_group;
  const std::vector<const CvCase*> pool = pool_of(cases, false, &per_group);
  std::map<std::string, std::vector<const CvCase*>> by_class;
  for (const CvCase& c : cases)
    if (c.step) by_class[c.cls].push_back(&c);
  const double groups = static_cast<double>(per_group.size());
  std::vector<ClassInterval> out;
  for (const auto& [cls, members] : by_class) {
    // The class's own residuals that were not extrapolated, each of its groups weighing one,
    // beside every class's, which together weigh kPooledWeight groups: a class of few groups
    // is shrunk toward the pool.
    std::map<std::string, int> own_groups, all_groups;
    for (const CvCase* c : members) {
      ++all_groups[c->group];
      if (!c->extrapolated) ++own_groups[c->group];
    }
    Weighted values, own_all;
    for (const CvCase* c : pool)
      values.emplace_back(magnitude(*c), kPooledWeight / groups / per_group[c->group]);
    for (const CvCase* c : members) {
      if (!c->extrapolated) values.emplace_back(magnitude(*c), 1.0 / own_groups[c->group]);
      own_all.emplace_back(magnitude(*c), 1.0);
    }
    ClassInterval ci;
    ci.cls = cls;
    for (const CvCase* c : members)
      if (c->run) ci.reach.add(scope_of(*c->run));  // a case without its run spans nothing
    ci.cases = static_cast<int>(members.size());
    ci.groups = static_cast<int>(all_groups.size());
    // Never narrower than the class's own held-out spread: `level` of all its cross-validated
    // residuals, those predicted with a constant its only group had fitted included.
    const double own_radius = quantile(own_all, level);
    const double radius =
        std::max(conformal_radius(values, groups, level), own_radius);
    set_ends(ci, radius);
    ci.basis = fmt::format(
        "{:.0f}% interval from {} cross-validated residuals in {} source group{} of this class, "
        "shrunk toward all {} in {} groups{}: {} to {} (measured step against predicted)",
        level * 100, ci.cases, ci.groups, ci.groups == 1 ? "" : "s", pool.size(),
        per_group.size(),
        radius == own_radius && own_radius > 0 ? ", widened to the class's own held-out spread"
                                               : "",
        percent(ci.low), percent(ci.high));
    out.push_back(ci);
  }
  return out;
}

namespace {

// The interval the tool would print for a case from every other group's residuals.
bool covered_without_group(const std::vector<CvCase>& cases, const CvCase& c) {
  std::vector<CvCase> others;
  for (const CvCase& o : cases)
    if (o.group != c.group) others.push_back(o);
  ClassInterval ci = extrapolation_interval(others, kIntervalLevel);
  if (!c.extrapolated) {
    ci = pooled_interval(others, kIntervalLevel);
    for (const ClassInterval& k : class_intervals(others, kIntervalLevel))
      if (k.cls == c.cls) ci = k;
  }
  return c.residual >= ci.low && c.residual <= ci.high;
}

// Whether a held-out run was predicted beyond its fold: a class no other group has, a plan
// outside what the class's other groups span (CorpusReach), or a constant pricing it that fell
// to its prior.
bool extrapolated_in_fold(const PublishedRun& run, const std::vector<KnobFit>& fold,
                          const std::map<std::string, CorpusReach>& seen_classes) {
  const auto seen = seen_classes.find(accuracy_class_of(run));
  if (seen == seen_classes.end() || !seen->second.outside(scope_of(run)).empty()) return true;
  for (const KnobFit& f : fold)
    if (f.cases == 0 && f.knob->applies(run)) return true;
  return false;
}

}  // namespace

CrossValidation cross_validate(const std::vector<PublishedRun>& given, StepModel step) {
  CrossValidation cv;
  cv.step = step;
  // The predictions point into `given`; the refits read each run's ratio fixed here, once.
  const std::vector<PublishedRun> runs = with_step_ratios(given, step);
  for (const PublishedRun& r : runs) cv.step_ratios.push_back(r.simulated_step_ratio);
  cv.fit = fit_knobs(runs, std::vector<bool>(runs.size(), true));
  cv.free_parameters = free_parameters(cv.fit);
  for (const PublishedRun& r : runs) {
    if (std::find(cv.groups.begin(), cv.groups.end(), r.source_group) == cv.groups.end())
      cv.groups.push_back(r.source_group);
  }
  // The folds are independent: each on its own thread, written to its own slot, and joined in
  // group order, so the cases come out the same whatever thread ran which fold.
  std::vector<std::vector<KnobFit>> folds(cv.groups.size());
  std::vector<std::vector<CvCase>> held_out(cv.groups.size());
  parallel_for(cv.groups.size(), 0, [&](size_t /*worker*/, size_t gi) {
    const std::string& g = cv.groups[gi];
    std::vector<bool> use(runs.size());
    bool refit = false;
    for (size_t i = 0; i < runs.size(); ++i) {
      use[i] = runs[i].source_group != g;
      for (const KnobFit& k : cv.fit) refit = refit || (!use[i] && k.knob->trains(runs[i]));
    }
    // Constants none of the group's runs trained are the same without it: no refit needed.
    // A refit starts from the full fit (Levenberg-Marquardt, a few iterations).
    folds[gi] = refit ? fit_knobs(runs, use, &cv.fit) : cv.fit;
    const std::vector<KnobFit>& fold = folds[gi];
    std::map<std::string, CorpusReach> seen;
    for (size_t i = 0; i < runs.size(); ++i)
      if (use[i] && is_step_metric(runs[i].metric))
        seen[accuracy_class_of(runs[i])].add(scope_of(runs[i]));
    for (size_t i = 0; i < runs.size(); ++i) {
      if (use[i]) continue;
      CvCase c;
      c.run = &given[i];
      c.group = g;
      c.cls = accuracy_class_of(runs[i]);
      PublishedRun in_sample = with_knobs(runs[i], cv.fit);
      c.in_sample_error = predict(in_sample).error;
      PublishedRun held = with_knobs(runs[i], fold);
      Prediction p = predict(held);
      c.cv_error = p.error;
      p.run = &given[i];
      c.step = step_residual(p, &c.residual);
      c.extrapolated = extrapolated_in_fold(runs[i], fold, seen);
      c.peak = runs[i].measured_peak_gib > 0 && p.predicted_peak_gib > 0;
      if (c.peak) c.peak_error = p.predicted_peak_gib / runs[i].measured_peak_gib - 1;
      held_out[gi].push_back(c);
    }
  });
  for (size_t gi = 0; gi < cv.groups.size(); ++gi) {
    cv.folds[cv.groups[gi]] = std::move(folds[gi]);
    cv.cases.insert(cv.cases.end(), held_out[gi].begin(), held_out[gi].end());
  }
  int covered = 0;
  for (CvCase& c : cv.cases) {
    if (!c.step) continue;
    ++cv.step_cases;
    c.covered = covered_without_group(cv.cases, c);
    covered += c.covered ? 1 : 0;
  }
  cv.coverage = cv.step_cases ? static_cast<double>(covered) / cv.step_cases : 0;
  cv.intervals = class_intervals(cv.cases, kIntervalLevel);
  cv.pooled = pooled_interval(cv.cases, kIntervalLevel);
  cv.extrapolation = extrapolation_interval(cv.cases, kIntervalLevel);
  return cv;
}

std::vector<KnobFit> calibrate_stack(const std::vector<PublishedRun>& runs) {
  std::vector<KnobFit> table;
  for (const auto& [fw, cls] : stacks_in(runs)) {
    Knob k = class_knob(fw, cls);
    k.prior_sigma = 0;  // the user's own runs: the data alone
    k.prior = nullptr;
    table.push_back(fit_row(std::move(k)));
  }
  if (table.empty()) return table;
  return fit_knobs(runs, std::vector<bool>(runs.size(), true), &table);
}

FewShot few_shot(const std::vector<PublishedRun>& given, const CrossValidation& cv, int k,
                 int evaluated_after) {
  FewShot out;
  out.k = k;
  // The runs as the folds read them: each with the step ratio cross_validate fixed.
  SHARDPLAN_CHECK(cv.step_ratios.size() == given.size(), "few_shot takes cross_validate's runs");
  std::vector<PublishedRun> runs = given;
  for (size_t i = 0; i < runs.size(); ++i) runs[i].simulated_step_ratio = cv.step_ratios[i];
  std::map<const PublishedRun*, size_t> index;
  for (size_t i = 0; i < given.size(); ++i) index[&given[i]] = i;
  // Buckets of step cases in file order: one user's model on one stack and cluster.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CvCase*>> buckets;
  for (const CvCase& c : cv.cases) {
    if (!c.step || !index.count(c.run)) continue;
    // A user calibrates on a short run of the model they will train, in its precision, and
    // plans other scales and layouts of it.
    const PublishedRun& r = *c.run;
    const std::string key = fmt::format("{}|{}|{} {}x{}x{}|{}", c.group, c.cls, r.model.name,
                                        r.model.layers, r.model.hidden, r.model.experts,
                                        to_string(r.training.precision));
    if (!buckets.count(key)) order.push_back(key);
    buckets[key].push_back(&c);
  }
  for (const std::string& key : order) {
    const std::vector<const CvCase*>& members = buckets[key];
    if (static_cast<int>(members.size()) <= evaluated_after) continue;
    const auto fold = cv.folds.find(members.front()->group);
    if (fold == cv.folds.end()) continue;
    std::vector<PublishedRun> held;
    held.reserve(members.size());
    for (const CvCase* c : members) held.push_back(with_knobs(runs[index[c->run]], fold->second));
    std::vector<KnobFit> calibration;
    if (k > 0) calibration = calibrate_stack({held.begin(), held.begin() + k});
    ++out.buckets;
    for (size_t j = static_cast<size_t>(evaluated_after); j < members.size(); ++j) {
      CvCase c = *members[j];
      Prediction p = predict(with_knobs(held[j], calibration));
      c.cv_error = p.error;
      p.run = members[j]->run;
      c.step = step_residual(p, &c.residual);
      c.cls = "calibrated";
      if (c.step) out.cases.push_back(c);
    }
  }
  int covered = 0;
  for (CvCase& c : out.cases) {
    c.extrapolated = false;
    c.covered = covered_without_group(out.cases, c);
    covered += c.covered ? 1 : 0;
  }
  out.coverage = out.cases.empty() ? 0 : static_cast<double>(covered) / out.cases.size();
  out.interval = pooled_interval(out.cases, kIntervalLevel);
  out.interval.cls = k > 0 ? fmt::format("calibrated on {} run{}", k, k == 1 ? "" : "s")
                           : "not calibrated";
  out.interval.basis = fmt::format(
      "{:.0f}% interval of a plan calibrated on {} run(s) of its stack and cluster: "
      "validate --calibrate-with {}, the held-out residuals of {} calibrated predictions in {} "
      "source groups (each group weighing one): {} to {} (measured step against predicted)",
      kIntervalLevel * 100, k, k, out.interval.cases, out.interval.groups,
      percent(out.interval.low), percent(out.interval.high));
  return out;
}

}  // namespace shardplan

namespace shardplan {

PairOrder pair_order(const CrossValidation& cv, double tie) {
  std::map<std::string, std::vector<const CvCase*>> tables;
  for (const CvCase& c : cv.cases) {
    if (!c.step || !c.run) continue;
    const PublishedRun& r = *c.run;
    const std::string model = fmt::format("{} {}x{}x{} {}", r.model.name, r.model.layers,
                                          r.model.hidden, r.model.experts,
                                          r.model.params_only);
    tables[fmt::format("{}|{}|{}|{}|{}|{}", c.group, model, r.training.seq_len,
                       r.cluster.gpu.name, r.cluster.gpus, to_string(r.metric))]
        .push_back(&c);
  }
  PairOrder out;
  for (const auto& [key, cases] : tables) {
    for (size_t a = 0; a < cases.size(); ++a) {
      for (size_t b = a + 1; b < cases.size(); ++b) {
        const double ma = cases[a]->run->measured, mb = cases[b]->run->measured;
        if (std::fabs(ma - mb) <= tie * std::max(ma, mb)) continue;
        const double pa = ma * (1 + cases[a]->cv_error), pb = mb * (1 + cases[b]->cv_error);
        ++out.pairs;
        if ((ma < mb) == (pa < pb)) ++out.concordant;
      }
    }
  }
  return out;
}

}  // namespace shardplan
