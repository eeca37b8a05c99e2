// The fitted constants as a table of knobs, their fitting procedure, and leave-one-source-group-
// out cross-validation with intervals from the held-out residuals.
#include "shardplan/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "shardplan/framework.hpp"

namespace shardplan {
namespace {

bool is_step_metric(Metric m) { return m != Metric::activations_gib; }

bool fitted_on(const PublishedRun& r, const char* framework, const char* gpu_class_name) {
  return !r.held_out && is_step_metric(r.metric) && r.training.framework.name == framework &&
         r.cluster.gpu.accuracy_class == gpu_class_name;
}

void scale_gemm(GpuSpec& g, double k) {
  for (EfficiencyPoint& p : g.gemm_efficiency) p.efficiency = std::min(0.99, p.efficiency * k);
}

double* kernel_speed_of(FrameworkPricing& p, const std::string& cls) {
  for (auto& [c, s] : p.kernel_speed_by_gpu)
    if (c == cls) return &s;
  return nullptr;
}

constexpr const char* kGrandTeton = "H100-96GB-500W";

std::vector<Knob> make_knobs() {
  std::vector<Knob> k;
  // The share of MAMF that GEMMs inside a Megatron-LM step reach (0.84 in every GPU profile's
  // gemm_efficiency) and the memory-bound kernels' share of HBM (0.72): fitted together on the
  // Megatron-LM A100 paper cases (Narayanan et al. 2021 Table 1, Korthikanti et al. 2022
  // Tables 4-5), and carried to every GPU and framework.
  const auto megatron_a100 = [](const PublishedRun& r) { return fitted_on(r, "megatron", "A100"); };
  const auto any_step = [](const PublishedRun& r) { return is_step_metric(r.metric); };
  k.push_back({"gemm_share_of_mamf",
               "every GPU profile's gemm_efficiency curve (e_max = 0.84 x MAMF / peak)", nullptr,
               megatron_a100, any_step,
               [](PublishedRun& r, double m) { scale_gemm(r.cluster.gpu, m); }});
  k.push_back({"memory_kernel_efficiency", "every GPU profile's memory_efficiency (0.72)", nullptr,
               megatron_a100, any_step,
               [](PublishedRun& r, double m) { r.cluster.gpu.memory_efficiency *= m; }});
  // PyTorch FSDP's eager kernels on A100 (fsdp kernels.speed_by_gpu A100, 0.933), fitted on
  // llm-foundry's one-node A100 rows; without them the generation falls back to kernels.speed.
  k.push_back({"fsdp_a100_kernel_speed", "profiles/frameworks/fsdp.json kernels.speed_by_gpu A100",
               [](const PublishedRun& r) {
                 FrameworkPricing p = r.training.framework.pricing;
                 const double* s = kernel_speed_of(p, "A100");
                 return s ? p.kernel_speed / *s : 1.0;
               },
               [](const PublishedRun& r) { return fitted_on(r, "fsdp", "A100"); },
               [](const PublishedRun& r) {
                 return r.training.framework.name == "fsdp" &&
                        r.cluster.gpu.accuracy_class == "A100";
               },
               [](PublishedRun& r, double m) {
                 if (double* s = kernel_speed_of(r.training.framework.pricing, "A100")) *s *= m;
               }});
  // DeepSpeed's pipeline engine against Megatron-LM's (deepspeed kernels.pipeline_engine 0.78),
  // fitted on MT-NLG 530B on 2,240 A100s; unfitted it is Megatron-LM's speed (1).
  const auto ds_pipeline = [](const PublishedRun& r) {
    return r.training.framework.name == "deepspeed" && r.plan.pp > 1;
  };
  k.push_back({"deepspeed_pipeline_engine_speed",
               "profiles/frameworks/deepspeed.json kernels.pipeline_engine.speed",
               [](const PublishedRun& r) {
                 return 1.0 / r.training.framework.pricing.pipeline_engine_speed;
               },
               [ds_pipeline](const PublishedRun& r) {
                 return ds_pipeline(r) && !r.held_out && is_step_metric(r.metric);
               },
               ds_pipeline,
               [](PublishedRun& r, double m) {
                 r.training.framework.pricing.pipeline_engine_speed *= m;
               }});
  // DeepSpeed ZeRO-3's effective bus-bandwidth share at each fitted group size (deepspeed
  // collectives.sharded_data_parallel.busbw_share), each fitted on its Narayanan et al. 2021
  // Table 2 row; unfitted the share is 1 (the link's nccl-tests busbw).
  for (size_t i = 0; i < 2; ++i) {
    const auto zero3 = [](const PublishedRun& r) {
      return r.training.framework.name == "deepspeed" && r.plan.zero == 3;
    };
    k.push_back({i == 0 ? "deepspeed_zero3_share_384" : "deepspeed_zero3_share_768",
                 "profiles/frameworks/deepspeed.json busbw_share point " + std::to_string(i + 1),
                 [i](const PublishedRun& r) {
                   const auto& pts = r.training.framework.pricing.zero3_busbw.points;
                   return i < pts.size() ? 1.0 / pts[i].second : 1.0;
                 },
                 [zero3, i](const PublishedRun& r) {
                   const auto& pts = r.training.framework.pricing.zero3_busbw.points;
                   return zero3(r) && !r.held_out && i < pts.size() &&
                          r.cluster.gpus == static_cast<int>(pts[i].first);
                 },
                 zero3,
                 [i](PublishedRun& r, double m) {
                   auto& pts = r.training.framework.pricing.zero3_busbw.points;
                   if (i < pts.size()) pts[i].second = std::min(1.0, pts[i].second * m);
                 }});
  }
  // The Grand Teton H100 at 500 W: one factor on its GEMM, attention and memory efficiencies
  // (0.639 of the H100 SXM's), fitted on torchtitan's Table 1 compiled row.
  k.push_back({"h100_500w_part_factor",
               "profiles/gpus/h100-96gb-500w.json efficiencies (x 0.639 of H100 SXM)",
               [](const PublishedRun&) { return 1.0 / 0.639; },
               [](const PublishedRun& r) {
                 return !r.held_out && is_step_metric(r.metric) && r.cluster.gpu.name == kGrandTeton;
               },
               [](const PublishedRun& r) { return r.cluster.gpu.name == kGrandTeton; },
               [](PublishedRun& r, double m) {
                 scale_gemm(r.cluster.gpu, m);
                 r.cluster.gpu.attention_efficiency *= m;
                 r.cluster.gpu.memory_efficiency *= m;
               }});
  return k;
}

double log_error(const PublishedRun& run) {
  const Prediction p = predict(run);
  if (p.predicted <= 0 || run.measured <= 0) return 10;
  return std::log(p.predicted / run.measured);
}

// Mean squared log error of `training` with knob j at multiplier m over the others in `fit`.
double loss(const std::vector<const PublishedRun*>& training, const std::vector<KnobFit>& fit,
            size_t j, double m) {
  std::vector<KnobFit> trial = fit;
  trial[j].multiplier = m;
  double sum = 0;
  for (const PublishedRun* r : training) {
    const double e = log_error(with_knobs(*r, trial));
    sum += e * e;
  }
  return sum / static_cast<double>(training.size());
}

// Golden-section search on log m in [1/2.5, 2.5] (the loss is unimodal in a speed factor).
double golden_section(const std::vector<const PublishedRun*>& training,
                      const std::vector<KnobFit>& fit, size_t j) {
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double a = std::log(0.4), b = std::log(2.5);
  double c = b - phi * (b - a), d = a + phi * (b - a);
  double fc = loss(training, fit, j, std::exp(c)), fd = loss(training, fit, j, std::exp(d));
  for (int it = 0; it < 22; ++it) {
    if (fc < fd) {
      b = d, d = c, fd = fc;
      c = b - phi * (b - a);
      fc = loss(training, fit, j, std::exp(c));
    } else {
      a = c, c = d, fc = fd;
      d = a + phi * (b - a);
      fd = loss(training, fit, j, std::exp(d));
    }
  }
  return std::exp((a + b) / 2);
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

const std::vector<Knob>& knobs() {
  static const std::vector<Knob> table = make_knobs();
  return table;
}

PublishedRun with_knobs(PublishedRun run, const std::vector<KnobFit>& fit) {
  const std::vector<Knob>& ks = knobs();
  for (size_t j = 0; j < ks.size() && j < fit.size(); ++j) {
    if (fit[j].multiplier != 1 && ks[j].applies(run)) ks[j].apply(run, fit[j].multiplier);
  }
  return run;
}

std::vector<PublishedRun> with_step_ratios(std::vector<PublishedRun> runs, StepModel step) {
  for (PublishedRun& r : runs) {
    if (r.simulated_step_ratio > 0) continue;
    r.simulated_step_ratio = step == StepModel::simulated ? predict(r).step_ratio : 1.0;
  }
  return runs;
}

std::vector<KnobFit> fit_knobs(const std::vector<PublishedRun>& given,
                               const std::vector<bool>& use) {
  const std::vector<PublishedRun> runs = with_step_ratios(given, StepModel::simulated);
  const std::vector<Knob>& ks = knobs();
  std::vector<KnobFit> fit(ks.size());
  std::vector<std::vector<const PublishedRun*>> training(ks.size());
  for (size_t j = 0; j < ks.size(); ++j) {
    fit[j].name = ks[j].name;
    const PublishedRun* any = nullptr;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (ks[j].applies(runs[i]) && !any) any = &runs[i];
      if (use[i] && ks[j].trains(runs[i])) training[j].push_back(&runs[i]);
    }
    fit[j].cases = static_cast<int>(training[j].size());
    if (training[j].empty() && any && ks[j].prior) fit[j].multiplier = ks[j].prior(*any);
  }
  for (int sweep = 0; sweep < 2; ++sweep) {
    for (size_t j = 0; j < ks.size(); ++j) {
      if (!training[j].empty()) fit[j].multiplier = golden_section(training[j], fit, j);
    }
  }
  return fit;
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
  const std::vector<Knob>& ks = knobs();
  for (size_t j = 0; j < ks.size(); ++j)
    if (fold[j].cases == 0 && ks[j].applies(run)) return true;
  return false;
}

}  // namespace

CrossValidation cross_validate(const std::vector<PublishedRun>& given, StepModel step) {
  CrossValidation cv;
  cv.step = step;
  const std::vector<Knob>& ks = knobs();
  // The predictions point into `given`; the refits read each run's ratio fixed here, once.
  const std::vector<PublishedRun> runs = with_step_ratios(given, step);
  cv.fit = fit_knobs(runs, std::vector<bool>(runs.size(), true));
  for (const PublishedRun& r : runs) {
    if (std::find(cv.groups.begin(), cv.groups.end(), r.source_group) == cv.groups.end())
      cv.groups.push_back(r.source_group);
  }
  for (const std::string& g : cv.groups) {
    std::vector<bool> use(runs.size());
    bool refit = false;
    for (size_t i = 0; i < runs.size(); ++i) {
      use[i] = runs[i].source_group != g;
      for (const Knob& k : ks) refit = refit || (!use[i] && k.trains(runs[i]));
    }
    // Constants none of the group's runs trained are the same without it: no refit needed.
    const std::vector<KnobFit> fold = refit ? fit_knobs(runs, use) : cv.fit;
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
      cv.cases.push_back(c);
    }
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
