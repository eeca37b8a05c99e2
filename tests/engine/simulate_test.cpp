// The step simulator: with communication off and even stages its bubble is the schedule papers'
// closed form (Narayanan et al. 2021; Qi et al. 2024, arXiv 2401.10241; DeepSeek-V3 report,
// arXiv 2412.19437, Table 2) where those hold, and hand-computed timelines where a slow stage,
// an uneven layout, a send, a bucketed reduce-scatter or an overlapped all-to-all decide the step.
#include "shardplan/simulate.hpp"

#include <doctest/doctest.h>

#include "shardplan/rerank.hpp"
#include "shardplan/schedule.hpp"
#include "shardplan/search.hpp"
#include "shardplan/step_simulation.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

// Devices p, chunks v, one micro-batch's device-wide passes F, B, W split evenly over the
// chunks; virtual stages placed as the order places them.
SimInput even(SimOrder o, int p, int v, int m, double f, double b, double w) {
  SimInput in;
  in.order = o;
  in.devices = p;
  in.micro_batches = m;
  const bool v_shape = o == SimOrder::zb_v || o == SimOrder::dualpipe_v;
  const int stages = o == SimOrder::dualpipe ? 2 * p : p * v;
  const int chunks = o == SimOrder::dualpipe ? 1 : v;
  for (int s = 0; s < stages; ++s) {
    SimStage st;
    st.device = v_shape                   ? (s < p ? s : 2 * p - 1 - s)
                : o == SimOrder::dualpipe ? (s < p ? s : 2 * p - 1 - s)
                                          : s % p;
    st.forward_s = f / chunks;
    st.input_grad_s = b / chunks;
    st.weight_grad_s = w / chunks;
    in.stages.push_back(st);
  }
  // DeepSeek's schedules as their papers time them: F&B chunks overlapped.
  in.pair_passes = o == SimOrder::dualpipe_v || o == SimOrder::dualpipe;
  return in;
}

// Every stage's forward and backward carry `f_a2a` and `b_a2a` of all-to-all.
void with_all_to_alls(SimInput& in, double f_a2a, double b_a2a) {
  for (SimStage& s : in.stages) {
    s.forward_comm.ep_s = f_a2a;
    s.backward_comm.ep_s = b_a2a;
  }
}

int overlapped_passes(const SimResult& r) {
  int pairs = 0;
  for (const SimEvent& e : r.events) pairs += e.kind == SimTaskKind::overlapped ? 1 : 0;
  return pairs;
}

// The simulated bubble: the step less one device's work, m (F + B + W).
double sim_bubble(const SimInput& in, double f, double b, double w) {
  const SimResult r = simulate(in);
  REQUIRE_FALSE(r.deadlocked);
  return r.step_s - in.micro_batches * (f + b + w);
}

double closed_bubble(Schedule s, int p, int v, double f, double b, double w) {
  ParallelPlan plan = test::plan(1, 1, p);
  plan.schedule = s;
  plan.interleave = v;
  return bubble_s(plan, PassTimes{f, b, w});
}

}  // namespace

TEST_CASE("1F1B, GPipe and interleaved: the simulated bubble is the closed form over (p, v, m)") {
  const double f = 1.0, b = 1.3, w = 0.7;
  int cases = 0;
  for (int p : {2, 4, 8, 16}) {
    for (int k : {1, 2, 4}) {
      const int m = k * p;  // Megatron-Core's groups of p divide the micro-batches
      CAPTURE(p);
      CAPTURE(m);
      CHECK(sim_bubble(even(SimOrder::gpipe, p, 1, m, f, b, w), f, b, w) ==
            doctest::Approx(closed_bubble(Schedule::gpipe, p, 1, f, b, w)).epsilon(0.01));
      CHECK(sim_bubble(even(SimOrder::one_f_one_b, p, 1, m, f, b, w), f, b, w) ==
            doctest::Approx(closed_bubble(Schedule::one_f_one_b, p, 1, f, b, w)).epsilon(0.01));
      for (int v : {2, 4}) {
        CAPTURE(v);
        CHECK(sim_bubble(even(SimOrder::interleaved, p, v, m, f, b, w), f, b, w) ==
              doctest::Approx(closed_bubble(Schedule::interleaved, p, v, f, b, w)).epsilon(0.01));
      }
      cases += 4;
    }
  }
  CHECK(cases == 48);
}

TEST_CASE("ZB-H1: Qi et al.'s (p-1)(F+B-W) while W <= F; not once W passes F") {
  for (int p : {2, 4, 8}) {
    CAPTURE(p);
    for (double w : {0.5, 1.0}) {
      CHECK(sim_bubble(even(SimOrder::zb_h1, p, 1, 4 * p, 1, 1, w), 1, 1, w) ==
            doctest::Approx((p - 1) * (1 + 1 - w)));
    }
    // The paper's formula would give (p-1)(1+2-2) = p-1, W passes filling more of the drain
    // than the order leaves them: the simulated order keeps (p-1)(F+B-F) = (p-1) B.
    CHECK(sim_bubble(even(SimOrder::zb_h1, p, 1, 4 * p, 1, 2, 2), 1, 2, 2) ==
          doctest::Approx((p - 1) * 2.0));
    // Interleaved (torchtitan's InterleavedZeroBubble): the 1/v of interleaving.
    CHECK(sim_bubble(even(SimOrder::zb_h1, p, 2, 4 * p, 1, 2, 1), 1, 2, 1) ==
          doctest::Approx(closed_bubble(Schedule::zb_h1, p, 2, 1, 2, 1)));
  }
}

TEST_CASE("ZB-V: Qi et al.'s (p-1)(F+B-2W)/2 at F = B = 2W; at F = B = W one step keeps the fill") {
  for (int p : {2, 4, 8}) {
    CAPTURE(p);
    CHECK(sim_bubble(even(SimOrder::zb_v, p, 2, 4 * p, 1, 1, 0.5), 1, 1, 0.5) ==
          doctest::Approx(closed_bubble(Schedule::zb_v, p, 2, 1, 1, 0.5)));
    // The paper's 0: the last device cannot start before the first micro-batch has crossed
    // p - 1 chunks, (p-1) F/2; across steps Qi et al.'s optimizer post-validation hides it, one
    // step cannot.
    CHECK(closed_bubble(Schedule::zb_v, p, 2, 1, 1, 1) == 0.0);
    CHECK(sim_bubble(even(SimOrder::zb_v, p, 2, 4 * p, 1, 1, 1), 1, 1, 1) ==
          doctest::Approx((p - 1) * 0.5));
  }
}

TEST_CASE("DualPipeV and DualPipe: DeepSeek-V3 Table 2 at F = B; below it when B = 2F") {
  for (int p : {2, 4, 8}) {
    CAPTURE(p);
    for (double w : {0.5, 1.0}) {
      CHECK(sim_bubble(even(SimOrder::dualpipe_v, p, 2, 4 * p, 1, 1, w), 1, 1, w) ==
            doctest::Approx(closed_bubble(Schedule::dualpipe_v, p, 2, 1, 1, w)));
      // DualPipe on p ranks: (p/2 - 1)(F&B + B - 3W) with F&B = F + B + W, B = B + W, every
      // rank holding one stage of each direction.
      const double full_b = 1 + w;
      CHECK(sim_bubble(even(SimOrder::dualpipe, p, 1, 4 * p, 1, 1, w), 1, 1, w) ==
            doctest::Approx((p / 2.0 - 1.0) * ((1 + full_b) + full_b - 3 * w)));
    }
    // Table 2 charges (p-1)(F&B + B - 3W)/2 = (p-1)(4 + 3 - 3)/2 whatever the order; the
    // simulated order hides part of the longer backward behind the pairs.
    CHECK(sim_bubble(even(SimOrder::dualpipe_v, 4, 2, 16, 1, 2, 1), 1, 2, 1) ==
          doctest::Approx(5.5));
    CHECK(closed_bubble(Schedule::dualpipe_v, 4, 2, 1, 2, 1) == doctest::Approx(6.0));
  }
}

TEST_CASE("A slow stage: 1F1B on 2 devices waits for it, by hand") {
  // Stage 0: F 1, B+W 2; stage 1 twice as slow. Device 1: F0 [1,3], BW0 [3,7], F1 [7,9],
  // BW1 [9,13]; device 0: F0 [0,1], F1 [1,2], BW0 [7,9], BW1 [13,15].
  SimInput in = even(SimOrder::one_f_one_b, 2, 1, 2, 1, 2, 0);
  in.stages[1].forward_s = 2;
  in.stages[1].input_grad_s = 4;
  const SimResult r = simulate(in);
  CHECK(r.step_s == doctest::Approx(15));
  CHECK(r.critical_device == 1);
  CHECK(r.devices[1].compute_s == doctest::Approx(12));
  CHECK(r.devices[1].bubble_s == doctest::Approx(3));
  CHECK(r.devices[0].bubble_s == doctest::Approx(9));
}

TEST_CASE("An uneven layout: interleaved chunks of 1, 2, 2, 1 layers, by hand") {
  // Chunks in model order 0..3 hold 1, 2, 2, 1 layers (F = layers, B+W = 2 layers); device 0
  // runs chunks 0 and 2, device 1 chunks 1 and 3; 2 micro-batches, groups of 2.
  // Device 0 (warm-up 4: all forwards): F0.0 [0,1] F0.1 [1,2] F2.0 [3,5] F2.1 [5,7];
  // device 1 (warm-up 2): F1.0 [1,3] F1.1 [3,5] F3.0 [5,6] B3.0 [6,8] F3.1 [8,9] B3.1 [9,11];
  // device 0: B2.0 [8,12] B2.1 [12,16]; device 1: B1.0 [12,16] B1.1 [16,20]; device 0:
  // B0.0 [16,18] B0.1 [20,22]. The even split's 1.5 layers a chunk would give 1F1B's
  // (p-1)(F+B)/v = 4.5 of bubble on 18 of work; the uneven one idles device 0 4 s.
  SimInput in = even(SimOrder::interleaved, 2, 2, 2, 1, 2, 0);
  const double layers[] = {1, 2, 2, 1};
  for (int s = 0; s < 4; ++s) {
    in.stages[s].forward_s = layers[s];
    in.stages[s].input_grad_s = 2 * layers[s];
  }
  const SimResult r = simulate(in);
  CHECK(r.step_s == doctest::Approx(22));
  CHECK(r.devices[0].compute_s == doctest::Approx(18));
  CHECK(r.devices[1].compute_s == doctest::Approx(18));
}

TEST_CASE("A blocking send holds its sender: interleaved 2 x 2 x 2, by hand") {
  // Megatron-Core's interleaved order (g = 2): device 0 runs F0 F1 F0' F1' B0' B1' B0 B1 (all
  // warm-up and cool-down), device 1 F0 F1 | F0' B0' F1' B1' | B0 B1 (its steady state between
  // the bars). Per virtual stage F = 1, B = 2, every boundary send 0.5 on its own stream.
  SimInput in = even(SimOrder::interleaved, 2, 2, 2, 2.0, 4.0, 0.0);
  for (SimStage& st : in.stages) st.send_s = 0.5;
  // Sends beside compute: device 1's last backward gets its gradient at 15.5 + 0.5 = 16 and
  // device 0's B1 runs 16 to 18.
  in.send_wait = SimSendWait::never;
  const SimResult async = simulate(in);
  REQUIRE_FALSE(async.deadlocked);
  CHECK(async.step_s == doctest::Approx(18.0));
  // Every send blocking: device 0's F1 starts at 1.5 after its first send, so every later
  // hand-off shifts; device 1's B0 waits for its own B1' send until 11.5, its B1 ends at 16, its
  // send at 16.5, and device 0's B1 runs 16.5 to 18.5: one send (0.5) more.
  in.send_wait = SimSendWait::always;
  const SimResult blocking = simulate(in);
  REQUIRE_FALSE(blocking.deadlocked);
  CHECK(blocking.step_s == doctest::Approx(18.5));
  CHECK(blocking.step_s - async.step_s == doctest::Approx(in.stages[0].send_s));
  // Megatron-LM's default with virtual stages: device 1's steady-state gradient sends (B0',
  // B1') run beside its next pass, which gives back the half second the blocking B1' send cost;
  // its steady-state forwards (F0', F1') end at the loss and send nothing.
  in.send_wait = SimSendWait::steady_gradients;
  const SimResult steady = simulate(in);
  REQUIRE_FALSE(steady.deadlocked);
  CHECK(steady.step_s == doctest::Approx(18.0));
}

TEST_CASE("A send crosses its link; a data-parallel reduce on the same NIC shares it") {
  // 1F1B, 2 devices, one micro-batch: F 1, B+W 2, each boundary send 0.5 s. Device 0: F [0,1],
  // send [1,1.5]; device 1: F [1.5,2.5], BW [2.5,4.5], send back [4.5,5]; device 0: BW [5,7].
  SimInput in = even(SimOrder::one_f_one_b, 2, 1, 1, 1, 2, 0);
  in.stages[0].send_s = 0.5;
  in.stages[0].send_link = SimLink::scale_out;
  SimResult r = simulate(in);
  CHECK(r.step_s == doctest::Approx(7));
  CHECK(r.devices[0].exposed_s[static_cast<int>(SimStream::pp)] == doctest::Approx(0.5));
  CHECK(r.devices[0].bubble_s == doctest::Approx(3.5));
  // Device 1's gradient reduce-scatter (1 s) starts with the send back, at 4.5; at half the
  // NIC each, the send ends at 5.5 (the reduce at 6), device 0's backward runs [5.5,7.5].
  in.stages[1].dp.reduce_s = 1;
  in.stages[1].dp.link = SimLink::scale_out;
  r = simulate(in);
  CHECK(r.step_s == doctest::Approx(7.5));
  CHECK(r.devices[0].exposed_s[static_cast<int>(SimStream::pp)] == doctest::Approx(1.0));
  double total = r.devices[0].compute_s + r.devices[0].bubble_s + r.devices[0].optimizer_s;
  for (double e : r.devices[0].exposed_s) total += e;
  CHECK(total == doctest::Approx(r.step_s));
}

TEST_CASE("Gradient buckets: each reduce-scatter runs after the part of the backward it reduces") {
  // One device, F 1, B+W 2 in 4 buckets of 0.5 s, each bucket's reduce 0.25 s, optimizer 0.1:
  // the last bucket's reduce [3,3.25] is all that shows, then the optimizer [3.25,3.35].
  SimInput in = even(SimOrder::one_f_one_b, 1, 1, 1, 1, 2, 0);
  in.stages[0].dp.reduce_s = 1;
  in.stages[0].dp.reduce_bytes = 4e9;
  in.stages[0].dp.buckets = 4;
  in.optimizer_s = {0.1};
  const SimResult r = simulate(in);
  CHECK(r.step_s == doctest::Approx(3.35));
  CHECK(r.devices[0].exposed_s[static_cast<int>(SimStream::dp_reduce)] == doctest::Approx(0.25));
  int reduces = 0;
  for (const SimEvent& e : r.events) {
    if (e.kind != SimTaskKind::grad_reduce) continue;
    CHECK(e.start_s == doctest::Approx(1.5 + 0.5 * reduces));  // not at t = 0
    CHECK(e.bytes == doctest::Approx(1e9));
    ++reduces;
  }
  CHECK(reduces == 4);
}

TEST_CASE("ZeRO-3: each unit's gather before it, with prefetch; reduce-scatters after backward") {
  // Two units: F 1 (0.5 each), B+W 2 (1 each), gathers 0.3, reduce-scatters 0.2. Forward:
  // g0 [0,0.3] g1 [0.3,0.6], units [0.3,0.8] [0.8,1.3]; backward: g2 [1.3,1.6] g3 [1.6,1.9],
  // units [1.6,2.6] [2.6,3.6], reduce-scatters [2.6,2.8] [3.6,3.8].
  SimInput in = even(SimOrder::one_f_one_b, 1, 1, 1, 1, 2, 0);
  DataParallelWork& dp = in.stages[0].dp;
  dp.units = 2;
  dp.unit_gather_s = 0.3;
  dp.unit_reduce_s = 0.2;
  const SimResult r = simulate(in);
  CHECK(r.step_s == doctest::Approx(3.8));
  CHECK(r.devices[0].exposed_s[static_cast<int>(SimStream::dp_gather)] == doctest::Approx(0.6));
  CHECK(r.devices[0].exposed_s[static_cast<int>(SimStream::dp_reduce)] == doctest::Approx(0.2));
}

TEST_CASE("An overlapped all-to-all: a DualPipeV F&B pair takes the longer of compute and comm") {
  // One device holding both chunks, 2 micro-batches: F0.0 F1.0 F0.1 BW1.0 [F1.1 & BW0.0]
  // BW1.1 B0.1 W0.1. F 1 (all-to-all 0.3 of it), B 1.2 (0.3), W 0.8: the pair runs
  // max(0.7 + 1.7, 0.6) = 2.4 instead of 3; the others carry their all-to-all.
  SimInput in = even(SimOrder::dualpipe_v, 1, 2, 2, 2, 2.4, 1.6);
  for (SimStage& s : in.stages) {
    s.forward_comm.ep_s = 0.3;
    s.backward_comm.ep_s = 0.3;
  }
  CHECK(simulate(in).step_s == doctest::Approx(3 + 2 + 2.4 + 2 + 1.2 + 0.8));
  // All-to-alls longer than the pair's compute: max(0.1 + 1.0, 1.9) = 1.9.
  for (SimStage& s : in.stages) {
    s.forward_comm.ep_s = 0.9;
    s.backward_comm.ep_s = 1.0;
  }
  const SimResult r = simulate(in);
  CHECK(r.step_s == doctest::Approx(3 + 2 + 1.9 + 2 + 1.2 + 0.8));
  int pairs = 0;
  for (const SimEvent& e : r.events) pairs += e.kind == SimTaskKind::overlapped ? 1 : 0;
  CHECK(pairs == 1);
}

TEST_CASE("DualPipeV without the overlap: each F&B chunk a forward, then a backward") {
  // The pair above unpaired (dualpipev.py _forward_backward_chunk without the module's
  // overlapped_forward_backward): F1.1 (1) then BW0.0 (2), all-to-alls in line, 3 + 2 + 3 + 2
  // + 1.2 + 0.8 = 12 whatever the all-to-alls take; the old simulator paired it anyway (11.4).
  SimInput in = even(SimOrder::dualpipe_v, 1, 2, 2, 2, 2.4, 1.6);
  with_all_to_alls(in, 0.3, 0.3);
  in.pair_passes = false;
  SimResult r = simulate(in);
  CHECK(r.step_s == doctest::Approx(12.0));
  CHECK(overlapped_passes(r) == 0);
  CHECK(r.devices[0].ep_in_passes_s == doctest::Approx(8 * 0.3));  // 4 forwards, 4 backwards
  with_all_to_alls(in, 0.9, 1.0);
  r = simulate(in);
  CHECK(r.step_s == doctest::Approx(12.0));
  CHECK(r.devices[0].ep_in_passes_s == doctest::Approx(4 * 0.9 + 4 * 1.0));
}

TEST_CASE("Megatron-Core's combined 1F1B without a pipeline: F0, then F(i+1) with BW(i), by hand") {
  // combined_1f1b_schedule_for_no_pipelining, 3 micro-batches, F 1 (all-to-all 0.3 of it),
  // B 1.2 (0.3), W 0.8: F0 1, [F1 & BW0] max(0.7 + 1.7, 0.6) = 2.4, [F2 & BW1] 2.4, BW2 2:
  // 7.8 against 9 in 1F1B's own order.
  SimInput in = even(SimOrder::one_f_one_b, 1, 1, 3, 1, 1.2, 0.8);
  with_all_to_alls(in, 0.3, 0.3);
  CHECK(simulate(in).step_s == doctest::Approx(9.0));
  in.pair_passes = true;
  const SimResult r = simulate(in);
  REQUIRE_FALSE(r.deadlocked);
  CHECK(r.step_s == doctest::Approx(1 + 2.4 + 2.4 + 2));
  CHECK(overlapped_passes(r) == 2);
  CHECK(r.devices[0].ep_in_passes_s == doctest::Approx(0.3 + 0.3));  // F0's and BW2's
  const auto order = issue_order(in);
  REQUIRE(order[0].size() == 4);
  CHECK(order[0][1].kind == SimTaskKind::overlapped);
  CHECK(order[0][1].micro_batch == 1);
  CHECK(order[0][1].micro_batch2 == 0);
}

TEST_CASE("Megatron-Core's combined 1F1B, interleaved 2 x 2 x 2: one more warm-up forward, by hand") {
  // Virtual stages 0 (device 0, chunk 0), 1 (device 1), 2 (device 0, chunk 1), 3 (device 1);
  // each F 1 (all-to-all 0.3), BW 2 (B 1.2 with 0.3, W 0.8). Device 1's warm-up is (v - 1) g
  // + 1 = 3 forwards (get_pp_rank_microbatches' += 1: without it the pair would be micro-batch
  // 0's forward and backward on the last stage), then [F3.1 & BW3.0], then its backwards;
  // device 0's warm-up holds all four forwards. Device 1: F1.0 [1,2] F1.1 [2,3] F3.0 [3,4]
  // pair [4, 6.4] BW3.1 [6.4, 8.4] BW1.0 [8.4, 10.4] BW1.1 [10.4, 12.4]; device 0: F0.0 F0.1
  // F2.0 F2.1 to 4, BW2.0 [6.4, 8.4] BW2.1 [8.4, 10.4] BW0.0 [10.4, 12.4] BW0.1 [12.4, 14.4].
  // Unpaired (Megatron-Core's interleaved order): 15.
  SimInput in = even(SimOrder::interleaved, 2, 2, 2, 2, 2.4, 1.6);
  with_all_to_alls(in, 0.3, 0.3);
  CHECK(simulate(in).step_s == doctest::Approx(15.0));
  in.pair_passes = true;
  const SimResult r = simulate(in);
  REQUIRE_FALSE(r.deadlocked);
  CHECK(r.step_s == doctest::Approx(14.4));
  CHECK(overlapped_passes(r) == 1);
  const auto order = issue_order(in);
  REQUIRE(order[1].size() == 7);
  CHECK(order[1][3].kind == SimTaskKind::overlapped);
  CHECK(order[1][3].stage == 3);
  CHECK(order[1][3].micro_batch == 1);
  CHECK(order[1][3].stage2 == 3);
  CHECK(order[1][3].micro_batch2 == 0);
  CHECK(order[0].size() == 8);  // nothing of device 0's pairs: every forward is warm-up
}

TEST_CASE("Compute beside communication slows by the profile's overlap slowdown") {
  SimInput in = even(SimOrder::one_f_one_b, 1, 1, 1, 1, 2, 0);
  in.stages[0].forward_comm.tp_hidden_s = 0.5;
  in.overlap_slowdown = 0.1;
  const SimResult r = simulate(in);
  CHECK(r.step_s == doctest::Approx(3.05));
  CHECK(r.devices[0].contention_s == doctest::Approx(0.05));
}

TEST_CASE("Equal inputs give equal events") {
  SimInput in = even(SimOrder::dualpipe_v, 4, 2, 8, 1, 1.5, 0.5);
  for (SimStage& s : in.stages) {
    s.send_s = 0.05;
    s.send_link = SimLink::scale_out;
    s.dp.reduce_s = 0.4;
    s.dp.buckets = 3;
    s.dp.link = SimLink::scale_out;
    s.forward_comm.ep_s = 0.2;
  }
  in.overlap_slowdown = 0.1;
  const SimResult a = simulate(in), b = simulate(in);
  REQUIRE(a.events.size() == b.events.size());
  REQUIRE(!a.events.empty());
  bool same = true;
  for (size_t i = 0; i < a.events.size(); ++i) {
    same = same && a.events[i].start_s == b.events[i].start_s &&
           a.events[i].end_s == b.events[i].end_s && a.events[i].kind == b.events[i].kind;
  }
  CHECK(same);
  CHECK(a.step_s == b.step_s);
}

TEST_CASE("The search's best plans ranked again by their simulated step") {
  const ModelSpec m = load_model("gpt3-1.3b");
  const TrainingSpec t = test::training(2048, 64);
  const ClusterSpec c = test::cluster(16, "dgx-h100");
  SearchSpace space = full_space(m, t, c);
  SearchOptions opt;
  opt.top_k = 6;
  opt.threads = 1;
  SearchResult r = search(m, t, c, space, opt);
  REQUIRE(r.ranked.size() == 6);
  const int k = 4;
  REQUIRE(rerank_by_simulation(m, t, c, Objective::time, k, r.ranked) == k);
  for (int i = 0; i < k; ++i) {
    const Candidate& cand = r.ranked[static_cast<size_t>(i)];
    CHECK(cand.step_s == doctest::Approx(estimate(m, t, cand.plan, c).simulated.step_s));
    if (i > 0) CHECK(r.ranked[static_cast<size_t>(i - 1)].objective <= cand.objective);
  }
}
