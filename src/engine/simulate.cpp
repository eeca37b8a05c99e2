// The step's task graph from the schedule's issue order: each pass a compute task (split per
// ZeRO-3 unit or per gradient bucket where communication waits on part of it), each boundary
// activation and gradient a send on the pipeline stream, each data-parallel collective a task
// after the pass that produces what it moves. Then the run, and where each device's time went.
#include "shardplan/simulate.hpp"

#include <algorithm>

#include "simulate_graph.hpp"

namespace shardplan {

namespace {

using sim::Graph;

// Where each (virtual stage, micro-batch)'s passes landed in the graph.
struct PassIds {
  int f_first = -1, f_last = -1;  // forward (its first and last ZeRO-3 unit)
  int b_first = -1, b_last = -1;  // input gradient (or the whole backward)
};

struct Builder {
  const SimInput& in;
  Graph& g;
  int m;
  std::vector<PassIds> ids;               // stage x micro-batch
  std::vector<std::vector<int>> reduces;  // per device: its gradient reductions
  // What each pass hands on, in the order the passes were built (so in each device's issue
  // order): its sends queue on the pipeline stream in that order.
  struct Crossing {
    int producer, stage, mb;
    bool backward;
    int pass;  // the producing pass's place in its device's issue order
  };
  std::vector<Crossing> crossings;
  std::vector<std::vector<int>> pass_first;  // per device, per pass in issue order: first task
  std::vector<std::pair<int, int>> steady;   // per device: its steady state's passes [from, to)
  std::vector<double> ep_exposed_s;  // per device: all-to-all time inside its passes

  Builder(const SimInput& input, Graph& graph)
      : in(input),
        g(graph),
        m(input.micro_batches),
        ids(input.stages.size() * static_cast<size_t>(input.micro_batches)),
        reduces(input.devices),
        pass_first(input.devices),
        steady(input.devices, {0, 0}),
        ep_exposed_s(input.devices, 0.0) {}

  PassIds& at(int stage, int mb) { return ids[static_cast<size_t>(stage) * m + mb]; }
  // The stage after `s` on its micro-batches' way forward (-1 at the loss); DualPipe has two.
  int next_stage(int s) const {
    const int n = static_cast<int>(in.stages.size());
    if (in.order == SimOrder::dualpipe && s == in.devices - 1) return -1;
    return s + 1 < n ? s + 1 : -1;
  }
  int prev_stage(int s) const {
    if (in.order == SimOrder::dualpipe && s == in.devices) return -1;
    return s > 0 ? s - 1 : -1;
  }

  static SimEvent event(SimTaskKind k, SimStream st, int device, int stage, int mb) {
    SimEvent e;
    e.kind = k;
    e.stream = st;
    e.device = device;
    e.stage = stage;
    e.micro_batch = mb;
    return e;
  }
  void attach_comm(int host, const PassComm& c, int stage, int mb) {
    const int d = g.tasks[host].event.device;
    const struct {
      SimTaskKind kind;
      SimStream stream;
      double s, bytes;
      SimLink link;
    } parts[] = {{SimTaskKind::tp, SimStream::tp, c.tp_hidden_s, c.tp_bytes, c.tp_link},
                 {SimTaskKind::cp, SimStream::cp, c.cp_hidden_s, c.cp_bytes, c.cp_link},
                 {SimTaskKind::all_to_all, SimStream::ep, c.ep_s, c.ep_bytes, c.ep_link}};
    for (const auto& part : parts) {
      if (part.s <= 0) continue;
      SimEvent e = event(part.kind, part.stream, d, stage, mb);
      e.bytes = part.bytes;
      e.link = part.link;
      g.attach(host, e, part.s);
    }
  }

  // A pass as `pieces` compute tasks in a row (one per ZeRO-3 unit or gradient bucket).
  std::pair<int, int> pass(SimTaskKind k, int d, int stage, int mb, double seconds, int pieces,
                           double recompute_s) {
    int first = -1, last = -1;
    for (int i = 0; i < pieces; ++i) {
      SimEvent e = event(k, SimStream::compute, d, stage, mb);
      e.recompute_s = i == 0 ? recompute_s : 0.0;
      last = g.add(e, seconds / pieces);
      if (first < 0) first = last;
    }
    return {first, last};
  }

  void build_device(int d, const std::vector<SimPass>& order);
  std::pair<int, int> overlapped_pass(int d, const SimPass& x, bool last);
  void zero3_pass(int d, int stage, int mb, int first, int last, bool gather, bool reduce,
                  int before);
  void bucket_reduces(int d, int stage, int mb, int first, int last, double seconds, double bytes);
  void links();
  bool send_waits(const Crossing& c, int device) const;
  void step_edges();
};

// ZeRO-3 / FSDP around one pass split into units: with `gather`, each unit's gather before it;
// with `reduce` (a backward that syncs), its reduce-scatter after it. `before` is the device's
// previous compute task.
void Builder::zero3_pass(int d, int stage, int mb, int first, int last, bool gather, bool reduce,
                         int before) {
  const DataParallelWork& dp = in.stages[stage].dp;
  for (int piece = first, i = 0; piece <= last; ++piece, ++i) {
    if (gather) {
      SimEvent e = event(SimTaskKind::param_gather, SimStream::dp_gather, d, stage, mb);
      e.bytes = dp.unit_gather_bytes;
      e.link = dp.link;
      const int id = g.add(e, dp.unit_gather_s);
      g.depend(id, piece);
      // Prefetch depth one: unit i's gather is issued when unit i - 1 starts, i.e. once unit
      // i - 2 is done (FSDP's forward/backward_prefetch); without it, when unit i - 1 is done.
      const int wait = dp.prefetch ? piece - 2 : piece - 1;
      if (i >= (dp.prefetch ? 2 : 1)) g.depend(wait, id);
      if (i < (dp.prefetch ? 2 : 1)) g.depend(before, id);
    }
    if (!reduce) continue;
    SimEvent r = event(SimTaskKind::grad_reduce, SimStream::dp_reduce, d, stage, mb);
    r.bytes = dp.unit_reduce_bytes;
    r.link = dp.link;
    const int reduce = g.add(r, dp.unit_reduce_s);
    g.depend(piece, reduce);
    reduces[d].push_back(reduce);
  }
}

void Builder::bucket_reduces(int d, int stage, int mb, int first, int last, double seconds,
                             double bytes) {
  const int buckets = last - first + 1;
  for (int piece = first; piece <= last; ++piece) {
    SimEvent r = event(SimTaskKind::grad_reduce, SimStream::dp_reduce, d, stage, mb);
    r.bytes = bytes / buckets;
    r.link = in.stages[stage].dp.link;
    const int reduce = g.add(r, seconds / buckets);
    g.depend(piece, reduce);
    reduces[d].push_back(reduce);
  }
}

// DeepSeek-V3 Sec. 3.2.1: within a forward-backward pair, each one's dispatch and combine run
// beside the other's compute, so the pair takes the longer of its compute and its all-to-alls.
// `last` when it holds its backward stage's last weight gradients.
std::pair<int, int> Builder::overlapped_pass(int d, const SimPass& x, bool last) {
  const SimStage& st = in.stages[x.stage];
  const SimStage& bs = in.stages[x.stage2];
  const double fa = st.forward_comm.ep_s, ba = bs.backward_comm.ep_s;
  const double compute = st.forward_s - fa + bs.input_grad_s + bs.weight_grad_s - ba;
  SimEvent e = event(x.kind, SimStream::compute, d, x.stage, x.micro_batch);
  e.stage2 = x.stage2;
  e.micro_batch2 = x.micro_batch2;
  e.recompute_s = bs.recompute_s;
  const int id = g.add(e, std::max(compute, fa + ba));
  ep_exposed_s[d] += std::max(0.0, fa + ba - compute);
  attach_comm(id, st.forward_comm, x.stage, x.micro_batch);
  attach_comm(id, bs.backward_comm, x.stage2, x.micro_batch2);
  at(x.stage, x.micro_batch).f_first = at(x.stage, x.micro_batch).f_last = id;
  at(x.stage2, x.micro_batch2).b_first = at(x.stage2, x.micro_batch2).b_last = id;
  const DataParallelWork& bdp = bs.dp;
  if (bdp.units > 0 && (!bdp.unit_reduce_last_only || last)) {
    bucket_reduces(d, x.stage2, x.micro_batch2, id, id, bdp.units * bdp.unit_reduce_s,
                   bdp.units * bdp.unit_reduce_bytes);
  } else if (bdp.reduce_s > 0 && (bdp.every_micro_batch || last)) {
    bucket_reduces(d, x.stage2, x.micro_batch2, id, id, bdp.reduce_s, bdp.reduce_bytes);
  }
  return {id, id};
}

// The steady state of a 1F1B-like order, as passes [from, to): after the w warm-up forwards,
// before the w cool-down backwards. Megatron-Core issues w forwards before its first backward's
// steady-state forward (schedules.py, num_warmup_microbatches), so the order opens with w + 1
// forwards unless every forward is in the warm-up.
std::pair<int, int> steady_state(const std::vector<SimPass>& order) {
  const int n = static_cast<int>(order.size());
  int leading = 0, forwards = 0;
  while (leading < n && order[leading].kind == SimTaskKind::forward) ++leading;
  for (const SimPass& x : order) forwards += x.kind == SimTaskKind::forward ? 1 : 0;
  const int warm = leading == forwards ? leading : leading - 1;
  return {warm, std::max(warm, n - warm)};
}

// One device's passes in its issue order.
void Builder::build_device(int d, const std::vector<SimPass>& order) {
  std::vector<int> last_w(in.stages.size(), -1);  // the index of each stage's last W pass
  std::vector<int> first_f(in.stages.size(), -1);  // and of its first forward
  for (size_t i = 0; i < order.size(); ++i) {
    const SimPass& x = order[i];
    if ((x.kind == SimTaskKind::forward || x.kind == SimTaskKind::overlapped) &&
        first_f[x.stage] < 0)
      first_f[x.stage] = static_cast<int>(i);
    if (x.kind == SimTaskKind::weight_grad || x.kind == SimTaskKind::backward) {
      last_w[x.stage] = static_cast<int>(i);
    } else if (x.kind == SimTaskKind::overlapped) {
      last_w[x.stage2] = static_cast<int>(i);
    }
  }
  steady[d] = steady_state(order);
  int before = -1;  // the device's previous compute task
  for (size_t i = 0; i < order.size(); ++i) {
    const SimPass& x = order[i];
    const SimStage& st = in.stages[x.stage];
    const DataParallelWork& dp = st.dp;
    const bool zero3 = dp.units > 0;
    const bool last = last_w[x.stage] == static_cast<int>(i);
    const bool reduce_here = dp.reduce_s > 0 && (dp.every_micro_batch || last);
    const bool zero3_reduces = !dp.unit_reduce_last_only || last;  // ZeRO-3's per-unit reductions
    const int buckets = reduce_here ? std::max(1, dp.buckets) : 1;
    std::pair<int, int> ids_of{-1, -1};
    switch (x.kind) {
      case SimTaskKind::forward:
        ids_of = pass(x.kind, d, x.stage, x.micro_batch, st.forward_s, zero3 ? dp.units : 1, 0);
        attach_comm(ids_of.first, st.forward_comm, x.stage, x.micro_batch);
        ep_exposed_s[d] += st.forward_comm.ep_s;
        if (zero3 && (!dp.unit_gather_first_only || first_f[x.stage] == static_cast<int>(i)))
          zero3_pass(d, x.stage, x.micro_batch, ids_of.first, ids_of.second, true, false, before);
        at(x.stage, x.micro_batch).f_first = ids_of.first;
        at(x.stage, x.micro_batch).f_last = ids_of.second;
        break;
      case SimTaskKind::input_grad:
      case SimTaskKind::backward: {
        const bool whole = x.kind == SimTaskKind::backward;
        const double s = st.input_grad_s + (whole ? st.weight_grad_s : 0.0);
        ids_of = pass(x.kind, d, x.stage, x.micro_batch, s,
                      zero3   ? dp.units
                      : whole ? buckets
                              : 1,
                      st.recompute_s);
        attach_comm(ids_of.first, st.backward_comm, x.stage, x.micro_batch);
        ep_exposed_s[d] += st.backward_comm.ep_s;
        if (zero3)
          zero3_pass(d, x.stage, x.micro_batch, ids_of.first, ids_of.second,
                     dp.unit_gather_backward, whole && zero3_reduces, before);
        if (!zero3 && whole && reduce_here)
          bucket_reduces(d, x.stage, x.micro_batch, ids_of.first, ids_of.second, dp.reduce_s,
                         dp.reduce_bytes);
        at(x.stage, x.micro_batch).b_first = ids_of.first;
        at(x.stage, x.micro_batch).b_last = ids_of.second;
        break;
      }
      case SimTaskKind::weight_grad:
        ids_of = pass(x.kind, d, x.stage, x.micro_batch, st.weight_grad_s, zero3 ? 1 : buckets, 0);
        g.depend(at(x.stage, x.micro_batch).b_last, ids_of.first);
        if (zero3 && zero3_reduces) {
          bucket_reduces(d, x.stage, x.micro_batch, ids_of.first, ids_of.second,
                         dp.units * dp.unit_reduce_s, dp.units * dp.unit_reduce_bytes);
        } else if (reduce_here) {
          bucket_reduces(d, x.stage, x.micro_batch, ids_of.first, ids_of.second, dp.reduce_s,
                         dp.reduce_bytes);
        }
        break;
      case SimTaskKind::overlapped:
        ids_of = overlapped_pass(d, x, last_w[x.stage2] == static_cast<int>(i));
        break;
      default:
        break;
    }
    const int n = static_cast<int>(i);
    if (x.kind == SimTaskKind::forward || x.kind == SimTaskKind::overlapped)
      crossings.push_back({at(x.stage, x.micro_batch).f_last, x.stage, x.micro_batch, false, n});
    if (x.kind == SimTaskKind::input_grad || x.kind == SimTaskKind::backward)
      crossings.push_back({ids_of.second, x.stage, x.micro_batch, true, n});
    if (x.kind == SimTaskKind::overlapped)
      crossings.push_back({ids_of.second, x.stage2, x.micro_batch2, true, n});
    pass_first[d].push_back(ids_of.first);
    before = ids_of.second;
  }
}

// A boundary crossing: on the same device a plain dependency, across devices a send on the
// sender's pipeline stream and link, queued in the order the sender's passes produce them.
void Builder::links() {
  for (const Crossing& c : crossings) {
    const PassIds& here = at(c.stage, c.mb);
    if (!c.backward && here.b_first >= 0) g.depend(here.f_last, here.b_first);  // the loss
    const int to = c.backward ? prev_stage(c.stage) : next_stage(c.stage);
    if (to < 0) continue;
    const int consumer = c.backward ? at(to, c.mb).b_first : at(to, c.mb).f_first;
    if (consumer < 0) continue;
    const int from_device = in.stages[c.stage].device;
    if (from_device == g.tasks[consumer].event.device) {
      g.depend(c.producer, consumer);
      continue;
    }
    // A gradient goes back over the boundary its activation came forward on.
    const SimStage& b = in.stages[c.backward ? prev_stage(c.stage) : c.stage];
    SimEvent e = event(SimTaskKind::send, SimStream::pp, from_device, c.stage, c.mb);
    e.bytes = b.send_bytes;
    e.link = b.send_link;
    const int send = g.add(e, b.send_s);
    g.depend(c.producer, send);
    g.depend(send, consumer);
    // A blocking send holds its sender: the device's next pass starts once it is done.
    const std::vector<int>& firsts = pass_first[static_cast<size_t>(from_device)];
    if (send_waits(c, from_device) && c.pass + 1 < static_cast<int>(firsts.size()))
      g.depend(send, firsts[static_cast<size_t>(c.pass) + 1]);
  }
}

bool Builder::send_waits(const Crossing& c, int device) const {
  switch (in.send_wait) {
    case SimSendWait::never:
      return false;
    case SimSendWait::always:
      return true;
    case SimSendWait::steady_gradients: {
      const auto [from, to] = steady[static_cast<size_t>(device)];
      return !c.backward || c.pass < from || c.pass >= to;
    }
  }
  return false;
}

// Per-step data-parallel work: ZeRO-1/2's weight gathers before each stage's first forward, and
// each device's optimizer step once its gradients are reduced.
void Builder::step_edges() {
  const int stages = static_cast<int>(in.stages.size());
  for (int s = 0; s < stages; ++s) {
    const DataParallelWork& dp = in.stages[s].dp;
    if (dp.gather_s <= 0 || dp.units > 0) continue;
    int first = -1;  // the stage's first forward in its device's order
    for (int mb = 0; mb < m; ++mb) {
      const int f = at(s, mb).f_first;
      if (f >= 0 && (first < 0 || f < first)) first = f;
    }
    const int buckets = std::max(1, dp.buckets);
    for (int k = 0; k < buckets; ++k) {
      SimEvent e =
          event(SimTaskKind::param_gather, SimStream::dp_gather, in.stages[s].device, s, -1);
      e.bytes = dp.gather_bytes / buckets;
      e.link = dp.link;
      const int gather = g.add(e, dp.gather_s / buckets);
      // --overlap-param-gather: the forward waits for its first bucket only.
      if (k == 0 || !dp.prefetch) g.depend(gather, first);
    }
  }
  for (int d = 0; d < in.devices; ++d) {
    const double opt = d < static_cast<int>(in.optimizer_s.size()) ? in.optimizer_s[d] : 0.0;
    SimEvent e = event(SimTaskKind::optimizer, SimStream::compute, d, -1, -1);
    const int step = g.add(e, opt);
    for (int r : reduces[d]) g.depend(r, step);
  }
}

}  // namespace

}  // namespace shardplan

namespace shardplan {

SimResult simulate(const SimInput& in) {
  SimResult r;
  if (in.devices < 1 || in.micro_batches < 1 || in.stages.empty()) return r;
  // One graph per thread, emptied for each simulation: a search or a fit simulates thousands
  // of steps, and fresh storage each time was a fifth of the run in page faults.
  thread_local Graph graph(0);
  graph.reset(in.devices);
  Builder b(in, graph);
  const auto orders = issue_order(in);
  size_t passes = 0;
  for (const auto& o : orders) passes += o.size();
  b.g.tasks.reserve(3 * passes + 4 * in.stages.size() + in.devices);
  b.g.pending.reserve(b.g.tasks.capacity());
  b.g.edges.reserve(4 * passes);
  for (int d = 0; d < in.devices; ++d) b.build_device(d, orders[d]);
  b.links();
  b.step_edges();
  r.deadlocked = !sim::run(b.g, in.overlap_slowdown);
  r.tasks = static_cast<int>(b.g.tasks.size());
  sim::account(b.g, in.keep_events, r);
  for (int d = 0; d < in.devices; ++d) r.devices[d].ep_in_passes_s = b.ep_exposed_s[d];
  return r;
}

}  // namespace shardplan
