// A plan's step through the simulator: each device's stage work (step_time.cpp's own figures)
// split over its model chunks by their layers, the boundary sends and data-parallel traffic
// from the step's communication breakdown, on the tier each group spans.
#include "shardplan/step_simulation.hpp"

#include <algorithm>
#include <cmath>

#include "shardplan/memory.hpp"
#include "shardplan/model.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/schedule.hpp"

namespace shardplan {

SimOrder sim_order(const ParallelPlan& p) {
  const ScheduleRow& r = schedule_row(p.schedule);  // the schedule table's orders
  return p.interleave > 1 ? r.order_interleaved : r.order;
}

bool sim_pairs_passes(const TrainingSpec& tr, const ParallelPlan& p, int micro_batches) {
  if (!p.moe_a2a_overlap || p.ep <= 1 || micro_batches < 2) return false;
  const FrameworkCaps& caps = tr.framework.caps;
  const auto& on = caps.moe_a2a_overlap_schedules;
  if (!caps.moe_a2a_overlap ||
      (!on.empty() && std::find(on.begin(), on.end(), schedule_of(p)) == on.end()))
    return false;
  const SimOrder order = sim_order(p);
  return order == SimOrder::dualpipe_v || order == SimOrder::interleaved ||
         (p.pp == 1 && order == SimOrder::one_f_one_b);
}

namespace {

SimLink tier_of(const Placement& g) {
  if (g.ranks <= 1) return SimLink::none;
  return g.domains() > 1 ? SimLink::scale_out : SimLink::scale_up;
}

const StageWork& work_of(const StepTime& t, int pp, int device) {
  if (device == 0) return t.first_work;
  if (device == pp - 1) return t.last_work;
  return t.middle_work;
}

// Megatron-Core's gradient buckets: max(40M, 1M x dp) parameters each
// (distributed_data_parallel.py, DistributedDataParallel.__init__ bucket_size); at most 16
// per chunk here, which keeps the task count bounded.
int bucket_count(double chunk_params, int dp) {
  const double bucket = std::max(40e6, 1e6 * dp);
  return std::clamp(static_cast<int>(std::ceil(chunk_params / bucket)), 1, 16);
}

// The data-parallel work of a chunk holding `share` of its device's parameters.
DataParallelWork chunk_dp(const ParallelPlan& p, const TrainingSpec& tr, const CommBreakdown& comm,
                          const StageWork& w, double share, double params) {
  DataParallelWork dp;
  dp.link = tier_of(comm.dp_grads.placement);
  dp.prefetch = tr.overlap_param_gather;
  // Deferred sync (memory.hpp defers_grad_sync): only the last micro-batch reduces.
  const bool deferred = defers_grad_sync(tr, p);
  // Hybrid sharding: each reduce-scatter is followed by its shard's all-reduce across the
  // replicas, priced with it on the reduce stream.
  const double replicate_bytes = comm.dp_replicate.present() ? comm.dp_replicate.bytes : 0.0;
  const double replicate_s = comm.dp_replicate.present() ? comm.dp_replicate.call_s : 0.0;
  if (p.zero >= 3) {
    dp.units = std::max(1, static_cast<int>(std::lround(w.zero3_units * share)));
    dp.unit_gather_s = w.zero3_gather_s;
    dp.unit_reduce_s = w.zero3_reduce_s;
    dp.unit_gather_bytes = comm.dp_params.bytes;
    dp.unit_reduce_bytes = comm.dp_grads.bytes + replicate_bytes;
    dp.unit_reduce_last_only = deferred;
    const Zero3Gathers gathers = zero3_gathers(tr, p);
    dp.unit_gather_backward = gathers.backward;
    dp.unit_gather_first_only = gathers.once_per_step;
    return dp;
  }
  if (comm.dp_grads.present()) {
    dp.reduce_s = share * (comm.dp_grads.call_s + replicate_s);
    dp.reduce_bytes = share * (comm.dp_grads.bytes + replicate_bytes);
    dp.every_micro_batch = p.zero == 2 && !deferred;
    dp.buckets = tr.overlap_grad_reduce ? bucket_count(share * params, p.dp) : 1;
  }
  if (comm.dp_params.present()) {
    dp.gather_s = share * comm.dp_params.call_s;
    dp.gather_bytes = share * comm.dp_params.bytes;
  }
  return dp;
}

// The framework's pipeline sends (FrameworkPricing::pp_send) under this plan's order.
SimSendWait send_wait(const TrainingSpec& tr, SimOrder order) {
  using P = FrameworkPricing::PipelineSend;
  switch (tr.framework.pricing.pp_send) {
    case P::async:
      return SimSendWait::never;
    case P::blocking:
      return SimSendWait::always;
    case P::steady_gradients_async:
      return order == SimOrder::interleaved ? SimSendWait::steady_gradients : SimSendWait::always;
  }
  return SimSendWait::never;
}

}  // namespace

SimInput step_sim_input(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                        const ClusterSpec& c, const StepTime& t, const CommBreakdown& comm) {
  SimInput in;
  in.order = sim_order(p);
  in.send_wait = send_wait(tr, in.order);
  in.pair_passes = sim_pairs_passes(tr, p, t.micro_batches);
  in.devices = p.pp;
  in.micro_batches = t.micro_batches;
  in.group_size = p.interleave > 1 ? microbatch_group_size(p, t.micro_batches) : 0;
  in.overlap_slowdown = c.gpu.overlap_slowdown;
  in.optimizer_s.assign(p.pp, t.optimizer_s);
  const int chunks = p.pp * p.interleave;
  const SimLink pp_link = tier_of(comm.pp.placement);
  const SimLink ep_link = tier_of(comm.ep.placement);
  for (int k = 0; k < chunks; ++k) {
    SimStage st;
    st.device = chunk_device(p, k);
    const StageWork& w = work_of(t, p.pp, st.device);
    const double device_layers = m.has_architecture() ? stage_layers(m.layers, p, st.device) : 1;
    const double layers = m.has_architecture() ? chunk_layers(m.layers, p, k) : 1.0 / p.interleave;
    const double share = device_layers > 0 ? layers / device_layers : 1.0 / p.interleave;
    st.forward_s = share * w.forward_s;
    st.input_grad_s = share * w.input_grad_s;
    st.weight_grad_s = share * w.weight_grad_s;
    st.recompute_s = share * w.recompute_s;
    const double fwd_share = w.forward_s / std::max(1e-30, w.forward_s + w.input_grad_s);
    st.forward_comm.tp_hidden_s = share * fwd_share * w.tp_hidden_s;
    st.backward_comm.tp_hidden_s = share * (1.0 - fwd_share) * w.tp_hidden_s;
    st.forward_comm.cp_hidden_s = share * w.cp_hidden_s / 3.0;  // forward K/V; backward 2x
    st.backward_comm.cp_hidden_s = share * w.cp_hidden_s * 2.0 / 3.0;
    st.forward_comm.ep_s = share * w.ep_forward_s;
    st.backward_comm.ep_s = share * w.ep_backward_s;
    st.forward_comm.tp_bytes = st.backward_comm.tp_bytes = comm.tp.bytes;
    st.forward_comm.cp_bytes = st.backward_comm.cp_bytes = comm.cp.bytes;
    st.forward_comm.ep_bytes = st.backward_comm.ep_bytes = comm.ep.bytes;
    st.forward_comm.ep_link = st.backward_comm.ep_link = ep_link;
    if (comm.pp.present()) {
      st.send_s = comm.pp.call_s;
      st.send_bytes = comm.pp.bytes;
      st.send_link = pp_link;
    }
    const double params = device_params(m, p, st.device).total() * share;
    st.dp = chunk_dp(p, tr, comm, w, share, params);
    in.stages.push_back(st);
  }
  return in;
}

SimulatedStep simulate_step(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                            const ClusterSpec& c, const StepTime& t, const CommBreakdown& comm,
                            bool events) {
  SimulatedStep out;
  SimInput in = step_sim_input(m, tr, p, c, t, comm);
  in.keep_events = events;
  out.order = in.order;
  out.result = simulate(in);
  const SimResult& r = out.result;
  if (r.deadlocked || r.devices.empty()) return out;
  out.ran = true;
  out.step_s = r.step_s + t.offload_s;
  out.tasks = r.tasks;
  out.critical_device = r.critical_device;
  const SimDevice& d = r.devices[r.critical_device];
  out.bubble_s = d.bubble_s;
  out.compute_s = d.compute_s;
  out.contention_s = d.contention_s;
  out.optimizer_s = d.optimizer_s;
  out.exposed_s = d.exposed_s;
  // What the passes carry: TP and CP exposure (the step model's), the all-to-alls the schedule
  // does not hide in F&B pairs (the simulator's).
  out.exposed_s[static_cast<int>(SimStream::tp)] += comm.tp.exposed_s;
  out.exposed_s[static_cast<int>(SimStream::cp)] += comm.cp.exposed_s;
  out.exposed_s[static_cast<int>(SimStream::ep)] += d.ep_in_passes_s;
  out.compute_s =
      std::max(0.0, d.compute_s - comm.tp.exposed_s - comm.cp.exposed_s - d.ep_in_passes_s);
  return out;
}

}  // namespace shardplan
