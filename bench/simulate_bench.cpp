// Simulator speed: one step of PP 16 x interleave 4 x 128 micro-batches (Megatron-Core's
// interleaved 1F1B, sends on the scale-out link, bucketed gradient reduce-scatters), with and
// without the event list, and the other schedules at PP 16 x 128. The figure the search's
// re-rank needs: well under 10 ms a simulation on one core. Best of `repeats` runs.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "shardplan/simulate.hpp"

using namespace shardplan;

namespace {

SimInput pipeline(SimOrder order, int p, int v, int m) {
  SimInput in;
  in.order = order;
  // DeepSeek's schedules as they run with their F&B chunks overlapped.
  in.pair_passes = order == SimOrder::dualpipe_v || order == SimOrder::dualpipe;
  in.devices = p;
  in.micro_batches = m;
  const bool v_shape = order == SimOrder::zb_v || order == SimOrder::dualpipe_v;
  const int stages = order == SimOrder::dualpipe ? 2 * p : p * v;
  for (int s = 0; s < stages; ++s) {
    SimStage st;
    st.device = v_shape || order == SimOrder::dualpipe ? (s < p ? s : 2 * p - 1 - s) : s % p;
    st.forward_s = 0.010;  // a chunk's forward on an H100-class GPU, order of magnitude
    st.input_grad_s = 0.011;
    st.weight_grad_s = 0.009;
    st.send_s = 0.0004;
    st.send_link = SimLink::scale_out;
    st.dp.reduce_s = 0.02;
    st.dp.buckets = 4;
    st.dp.link = SimLink::scale_out;
    in.stages.push_back(st);
  }
  in.optimizer_s.assign(p, 0.005);
  in.overlap_slowdown = 0.1;
  return in;
}

void time(const char* what, SimInput in, bool events, int repeats) {
  in.keep_events = events;
  double best_s = 1e30;
  SimResult r;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    r = simulate(in);
    const auto t1 = std::chrono::steady_clock::now();
    best_s = std::min(best_s, std::chrono::duration<double>(t1 - t0).count());
  }
  fmt::print("{:<42} {:>6} tasks {:>7} events: {:8.3f} ms a simulation (step {:.4f} s)\n", what,
             r.tasks, r.events.size(), best_s * 1e3, r.step_s);
}

}  // namespace

int main() {
  const int repeats = 20;
  time("interleaved pp 16 x v 4 x 128, figures", pipeline(SimOrder::interleaved, 16, 4, 128), false,
       repeats);
  time("interleaved pp 16 x v 4 x 128, events", pipeline(SimOrder::interleaved, 16, 4, 128), true,
       repeats);
  const SimOrder others[] = {SimOrder::one_f_one_b, SimOrder::gpipe,      SimOrder::zb_h1,
                             SimOrder::zb_v,        SimOrder::dualpipe_v, SimOrder::dualpipe};
  for (SimOrder o : others) {
    const int v = o == SimOrder::zb_v || o == SimOrder::dualpipe_v ? 2 : 1;
    time(fmt::format("{} pp 16 x v {} x 128, figures", to_string(o), v).c_str(),
         pipeline(o, 16, v, 128), false, repeats);
  }
  return 0;
}
