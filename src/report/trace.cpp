// The step timeline and its Chrome Trace Event JSON.
#include "shardplan/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "shardplan/schedule.hpp"

namespace shardplan {
namespace {

const PassTimes& stage_passes(const StepTime& t, int pp, int stage) {
  if (stage == 0) return t.first_stage;
  if (stage == pp - 1) return t.last_stage;
  return t.middle_stage;
}

// The order a stage runs its micro-batches' passes: 'F' forward, 'B' backward (with W right
// after, or deferred one slot in the zero-bubble schedules).
std::vector<std::pair<char, int>> pass_order(const ParallelPlan& p, int micro_batches, int stage) {
  std::vector<std::pair<char, int>> out;
  const int m = micro_batches;
  if (p.schedule == Schedule::gpipe) {
    for (int i = 0; i < m; ++i) out.emplace_back('F', i);
    for (int i = 0; i < m; ++i) out.emplace_back('B', i);
    return out;
  }
  const int warm =
      std::clamp(static_cast<int>(std::ceil(microbatches_in_flight(p, m, stage) - 1e-9)), 1, m);
  for (int i = 0; i < warm; ++i) out.emplace_back('F', i);
  for (int i = 0; i < m; ++i) {
    out.emplace_back('B', i);
    if (warm + i < m) out.emplace_back('F', warm + i);
  }
  return out;
}

struct StageLane {
  Timeline& tl;
  int stage;
  double now;
  void add(std::string name, const char* category, double seconds, int process = 1,
           int track = -1) {
    if (seconds <= 0) return;
    TraceEvent ev;
    ev.name = std::move(name);
    ev.category = category;
    ev.process = process;
    ev.track = track < 0 ? stage : track;
    ev.start_s = now;
    ev.duration_s = seconds;
    tl.events.push_back(std::move(ev));
    now += seconds;
  }
};

// A pass's name: F, B, W, BW or F&B with micro-batch.chunk, as the schedule papers draw them.
std::string pass_name(const SimEvent& ev, int pp) {
  auto id = [&](int mb, int stage) { return fmt::format("{}.{}", mb, stage / pp); };
  if (ev.kind == SimTaskKind::overlapped) {
    return fmt::format("F{}&B{}", id(ev.micro_batch, ev.stage), id(ev.micro_batch2, ev.stage2));
  }
  if (ev.kind == SimTaskKind::optimizer) return "optimizer step";
  return fmt::format("{}{}", to_string(ev.kind), id(ev.micro_batch, ev.stage));
}

const char* pass_category(SimTaskKind k) {
  switch (k) {
    case SimTaskKind::forward: return "forward";
    case SimTaskKind::weight_grad: return "weight-grad";
    case SimTaskKind::optimizer: return "optimizer";
    case SimTaskKind::overlapped: return "forward+backward";
    default: return "backward";
  }
}

// The simulator's events: passes on their stage's track (a backward's recompute drawn first),
// collectives on a track per stage and stream, each with its arguments.
Timeline simulated_timeline(const ParallelPlan& p, const SimulatedStep& sim) {
  Timeline tl;
  tl.span_s = sim.result.step_s;
  tl.slowest_stage = sim.critical_device;
  for (int s = 0; s < p.pp; ++s) tl.stage_names.push_back(fmt::format("stage {}", s));
  std::vector<int> track_of(static_cast<size_t>(p.pp) * kSimStreams, -1);
  // One event per simulated one, two where a backward draws its recompute first: reserved once,
  // not grown by copying every event's strings again.
  size_t recomputes = 0;
  for (const SimEvent& ev : sim.result.events) recomputes += ev.recompute_s > 0 ? 1 : 0;
  tl.events.reserve(sim.result.events.size() + recomputes);
  for (const SimEvent& ev : sim.result.events) {
    const double dur = ev.end_s - ev.start_s;
    if (dur <= 0) continue;
    TraceEvent out;
    out.start_s = ev.start_s;
    out.duration_s = dur;
    out.micro_batch = ev.micro_batch;
    out.chunk = ev.stage >= 0 ? ev.stage / p.pp : -1;
    if (ev.stream == SimStream::compute) {
      out.process = 1;
      out.track = ev.device;
      out.name = pass_name(ev, p.pp);
      out.category = pass_category(ev.kind);
      const double rec = std::min(ev.recompute_s, dur);
      if (rec > 0) {
        TraceEvent r = out;
        r.name = fmt::format(
            "R{}", std::string_view(out.name).substr(out.name.find_first_of("0123456789")));
        r.category = "recompute";
        r.duration_s = rec;
        tl.events.push_back(std::move(r));
        out.start_s += rec;
        out.duration_s -= rec;
      }
      tl.events.push_back(std::move(out));
      continue;
    }
    int& track =
        track_of[static_cast<size_t>(ev.device) * kSimStreams + static_cast<int>(ev.stream)];
    if (track < 0) {
      track = static_cast<int>(tl.comm_names.size());
      tl.comm_names.push_back(fmt::format("stage {} {}", ev.device, to_string(ev.stream)));
    }
    out.process = 2;
    out.track = track;
    out.category = "comm";
    out.name = ev.micro_batch >= 0
                   ? fmt::format("{} {}.{}", to_string(ev.kind), ev.micro_batch, out.chunk)
                   : fmt::format("{} chunk {}", to_string(ev.kind), out.chunk);
    out.bytes = ev.bytes;
    out.group = to_string(ev.stream);
    out.link = to_string(ev.link);
    tl.events.push_back(std::move(out));
  }
  return tl;
}

// A kind's track on the closed form's timeline.
const char* trace_name(TrafficKind k) {
  switch (k) {
    case TrafficKind::dp_grads:
      return "DP/ZeRO gradients";
    case TrafficKind::dp_params:
      return "DP/ZeRO weights";
    case TrafficKind::dp_replicate:
      return "DP replica all-reduce";
    case TrafficKind::tp:
      return "TP";
    case TrafficKind::pp:
      return "PP send/recv";
    case TrafficKind::cp:
      return "CP";
    case TrafficKind::ep:
      return "EP";
  }
  return "";
}

}  // namespace

Timeline build_timeline(const ParallelPlan& p, const Estimate& e) {
  if (e.simulated.ran && !e.simulated.result.events.empty())
    return simulated_timeline(p, e.simulated);
  Timeline tl;
  const StepTime& t = e.time;
  const int m = t.micro_batches;
  const double bubble = t.bubble_s;
  // Contention (compute slowed by overlapped communication) stretches every pass alike.
  const PassTimes& crit = stage_passes(t, p.pp, t.critical_stage);
  const double crit_body = m * crit.total_s();
  const double stretch = crit_body > 0 ? (crit_body + t.contention_s) / crit_body : 1.0;
  const double recompute_share =
      t.compute_s > 0 ? t.recompute_s / std::max(1e-30, t.compute_s - t.contention_s) : 0.0;
  const double dp_exposed = std::max(0.0, t.step_s - bubble - stretch * crit_body - t.optimizer_s);
  tl.slowest_stage = t.critical_stage;
  for (int s = 0; s < p.pp; ++s) {
    tl.stage_names.push_back(fmt::format("stage {}", s));
    const PassTimes& pt = stage_passes(t, p.pp, s);
    const double fill = p.pp > 1 ? bubble * s / (p.pp - 1.0) : 0.0;
    StageLane lane{tl, s, fill};
    const double f = stretch * pt.forward_s / p.interleave;
    const double b = stretch * pt.input_grad_s / p.interleave;
    const double w = stretch * pt.weight_grad_s / p.interleave;
    const double full = pt.forward_s + pt.input_grad_s + pt.weight_grad_s;
    const double rec = stretch * recompute_share * full / p.interleave;
    for (const auto& [kind, mb] : pass_order(p, m, s)) {
      for (int k = 0; k < p.interleave; ++k) {
        const std::string id =
            p.interleave > 1 ? fmt::format("{}.{}", mb, kind == 'F' ? k : p.interleave - 1 - k)
                             : std::to_string(mb);
        if (kind == 'F') {
          lane.add("F" + id, "forward", f);
        } else {
          lane.add("R" + id, "recompute", std::min(rec, b));
          lane.add("B" + id, "backward", b - std::min(rec, b));
          lane.add("W" + id, "weight-grad", w);
        }
      }
    }
    // Every stage reaches the drain's end together, then syncs gradients and steps.
    lane.now = bubble + stretch * crit_body;
    lane.add("data-parallel sync (exposed)", "exposed", dp_exposed);
    lane.add("optimizer step", "optimizer", t.optimizer_s);
    tl.span_s = std::max(tl.span_s, lane.now);
  }
  // The slowest stage's streams. Per-micro-batch streams (TP, PP, CP, EP) run inside its passes,
  // their exposed part already counted there; the data-parallel ones overlap the last backward
  // and leave their exposed part after the drain, where the stage tracks show it.
  const CommBreakdown& c = e.comm;
  const double body_start = p.pp > 1 ? bubble * t.critical_stage / (p.pp - 1.0) : 0.0;
  const double sync_start = bubble + stretch * crit_body;
  // The model-parallel streams first, then the data-parallel ones that end the step.
  struct Stream {
    const char* name;
    const Traffic& traffic;
    bool data_parallel;
  };
  std::vector<Stream> streams;
  for (bool data : {false, true}) {
    for (TrafficKind k : kTrafficKinds) {
      if ((parallelism_of(k) == Parallelism::data) == data)
        streams.push_back({trace_name(k), c.of(k), data});
    }
  }
  int track = 0;
  double dp_exposed_start = sync_start;
  for (const Stream& st : streams) {
    if (st.traffic.time_s <= 0) continue;
    tl.comm_names.push_back(st.name);
    const double exposed = st.traffic.exposed_s;
    const double hidden = std::max(0.0, st.traffic.time_s - exposed);
    StageLane lane{tl, track, body_start};
    if (st.data_parallel && p.zero < 3) lane.now = std::max(body_start, sync_start - hidden);
    lane.add(fmt::format("{} overlapped", st.name), "comm", hidden, 2, track);
    if (st.data_parallel && p.zero < 3) {
      lane.now = dp_exposed_start;
      dp_exposed_start += exposed;
    }
    lane.add(fmt::format("{} exposed", st.name), "exposed", exposed, 2, track);
    ++track;
  }
  return tl;
}

namespace {

// The Chrome trace written straight into one string, byte for byte what nlohmann::json's dump()
// of the same tree gives (keys in its sorted order, numbers through its own shortest-digits
// writer, strings escaped by it where they need escaping), without building the tree: a 17,600
// event trace took 20x the estimate it traces as a tree, almost all of it allocating and freeing
// the tree's nodes.
class TraceWriter {
 public:
  // About 210 bytes an event on the 405B step: 256 leaves room for events like those, so such a
  // trace is written without regrowing; longer names (a model's own) may still grow it once.
  explicit TraceWriter(size_t events) { out_.reserve(events * 256 + 4096); }
  std::string& out() { return out_; }

  void raw(const char* text) { out_ += text; }
  void number(double v) {
    if (!std::isfinite(v)) {
      out_ += "null";
      return;
    }
    std::array<char, 64> buffer{};
    char* end = nlohmann::detail::to_chars(buffer.data(), buffer.data() + buffer.size(), v);
    out_.append(buffer.data(), static_cast<size_t>(end - buffer.data()));
  }
  void number(int v) { fmt::format_to(std::back_inserter(out_), "{}", v); }
  void text(std::string_view v) {
    const bool plain = std::all_of(v.begin(), v.end(), [](char c) {
      const auto u = static_cast<unsigned char>(c);
      return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
    });
    if (!plain) {
      out_ += nlohmann::json(std::string(v)).dump();
      return;
    }
    out_ += '"';
    out_ += v;
    out_ += '"';
  }

 private:
  std::string out_;
};

void meta_event(TraceWriter& w, const char* what, int pid, int tid, const std::string& name) {
  w.raw("{\"args\":{\"name\":");
  w.text(name);
  w.raw("},\"name\":");
  w.text(what);
  w.raw(",\"ph\":\"M\",\"pid\":");
  w.number(pid);
  if (tid >= 0) {
    w.raw(",\"tid\":");
    w.number(tid);
  }
  w.raw("}");
}

void span_event(TraceWriter& w, const TraceEvent& ev) {
  // args' keys in sorted order: bytes, chunk, group, link, micro_batch.
  w.raw("{\"args\":{");
  bool first = true;
  auto key = [&](const char* name) {
    w.raw(first ? "\"" : ",\"");
    first = false;
    w.raw(name);
    w.raw("\":");
  };
  const bool moves = !ev.group.empty();
  if (moves) {
    key("bytes");
    w.number(ev.bytes);
  }
  if (ev.chunk >= 0) {
    key("chunk");
    w.number(ev.chunk);
  }
  if (moves) {
    key("group");
    w.text(ev.group);
    key("link");
    w.text(ev.link);
  }
  if (ev.micro_batch >= 0) {
    key("micro_batch");
    w.number(ev.micro_batch);
  }
  w.raw("},\"cat\":");
  w.text(ev.category);
  w.raw(",\"dur\":");
  w.number(ev.duration_s * 1e6);
  w.raw(",\"name\":");
  w.text(ev.name);
  w.raw(",\"ph\":\"X\",\"pid\":");
  w.number(ev.process);
  w.raw(",\"tid\":");
  w.number(ev.track);
  w.raw(",\"ts\":");
  w.number(ev.start_s * 1e6);
  w.raw("}");
}

}  // namespace

std::string trace_json(const Timeline& tl, const std::string& title) {
  TraceWriter w(tl.events.size());
  w.raw("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"slowest_stage\":");
  w.number(tl.slowest_stage);
  w.raw(",\"step_s\":");
  w.number(tl.span_s);
  w.raw(",\"title\":");
  w.text(title);
  w.raw("},\"traceEvents\":[");
  bool first = true;
  auto next = [&] {
    if (!first) w.raw(",");
    first = false;
  };
  next();
  meta_event(w, "process_name", 1, -1, "pipeline stages");
  next();
  meta_event(w, "process_name", 2, -1, "communication");
  for (size_t i = 0; i < tl.stage_names.size(); ++i) {
    next();
    meta_event(w, "thread_name", 1, static_cast<int>(i), tl.stage_names[i]);
  }
  for (size_t i = 0; i < tl.comm_names.size(); ++i) {
    next();
    meta_event(w, "thread_name", 2, static_cast<int>(i), tl.comm_names[i]);
  }
  for (const TraceEvent& ev : tl.events) {
    next();
    span_event(w, ev);
  }
  w.raw("]}\n");
  return std::move(w.out());
}

}  // namespace shardplan
