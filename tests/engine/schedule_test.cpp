// Pipeline schedules and stage layouts: the schedule papers' bubble and memory tables, the
// published Llama 3 405B layout, and the timeline that shows them.
#include "shardplan/schedule.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "shardplan/model.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/step_time.hpp"
#include "shardplan/trace.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

ParallelPlan pipeline(int pp, Schedule s, int v = 1) {
  ParallelPlan p = test::plan(1, 1, pp);
  p.schedule = s;
  p.interleave = v;
  return p;
}

double bubble(Schedule s, int pp, int v, PassTimes t) {
  return bubble_s(pipeline(pp, s, v), t);
}

}  // namespace

TEST_CASE("bubbles at T_F = T_B = T_W: the zero-bubble papers' comparison") {
  // Qi et al. 2024 (sail-sg/zero-bubble-pipeline-parallelism README, "assuming T_F = T_B =
  // T_W"): bubble rate 1F1B (p-1)/m, ZB-H1 (p-1)/(3m), ZB-V 0; DeepSeek-V3 Table 2 DualPipeV
  // (PP/2-1)(F&B + B - 3W) with PP/2 = p devices of two chunks each.
  const PassTimes unit{1.0, 1.0, 1.0};  // one device's F, B, W for a micro-batch
  const int p = 8;
  const double one_f_one_b = bubble(Schedule::one_f_one_b, p, 1, unit);
  CHECK(one_f_one_b == doctest::Approx((p - 1) * 3.0));
  CHECK(bubble(Schedule::gpipe, p, 1, unit) == doctest::Approx(one_f_one_b));
  CHECK(bubble(Schedule::zb_h1, p, 1, unit) == doctest::Approx(one_f_one_b / 3.0));
  CHECK(bubble(Schedule::zb_v, p, 2, unit) == doctest::Approx(0.0));
  CHECK(bubble(Schedule::interleaved, p, 2, unit) == doctest::Approx(one_f_one_b / 2.0));
  // Chunk times F = W = 0.5, full backward B = 1, F&B = 1.5: (p-1)(1.5 + 1 - 1.5) = p - 1.
  CHECK(bubble(Schedule::dualpipe_v, p, 2, unit) == doctest::Approx(p - 1.0));
}

TEST_CASE("ZB-H1's bubble is 1F1B's less two weight-gradient passes per fill step") {
  // Qi et al. 2024 Sec. 2.1: ZB-H1 (p-1)(T_F + T_B - T_W) against 1F1B (p-1)(T_F + T_B + T_W),
  // T_B the input-gradient pass alone.
  const PassTimes t{1.0, 1.2, 0.8};
  const int p = 16;
  CHECK(bubble(Schedule::zb_h1, p, 1, t) == doctest::Approx(15 * (1.0 + 1.2 - 0.8)));
  CHECK(bubble(Schedule::one_f_one_b, p, 1, t) - bubble(Schedule::zb_h1, p, 1, t) ==
        doctest::Approx(2 * 15 * 0.8));
  // A weight pass longer than the rest cannot make the bubble negative.
  CHECK(bubble(Schedule::zb_v, p, 2, PassTimes{0.1, 0.1, 1.0}) == 0.0);
}

TEST_CASE("activations in flight per schedule") {
  // 1F1B: p - i micro-batches on stage i (Narayanan et al. 2021); ZB-H1 the same (Qi et al. Sec.
  // 2.1); GPipe all m; ZB-V p on every device (1F1B's peak, balanced); DualPipeV PP + 1 = 2p + 1
  // half-device chunks (DeepSeek-V3 Table 2); interleaved stage 0 1 + (p-1)/(p v) of the model
  // (Korthikanti et al. 2022 Sec. 4.2.3).
  const int p = 8, m = 32;
  struct Row {
    Schedule s;
    int v;
    double stage0, stage7;
  };
  const Row rows[] = {{Schedule::one_f_one_b, 1, 8, 1},    {Schedule::zb_h1, 1, 8, 1},
                      {Schedule::gpipe, 1, 32, 32},        {Schedule::zb_v, 2, 8, 8},
                      {Schedule::dualpipe_v, 2, 8.5, 8.5}, {Schedule::interleaved, 2, 11.5, 4.5}};
  for (const Row& r : rows) {
    CAPTURE(to_string(r.s));
    const ParallelPlan plan = pipeline(p, r.s, r.v);
    CHECK(microbatches_in_flight(plan, m, 0) == doctest::Approx(r.stage0));
    CHECK(microbatches_in_flight(plan, m, p - 1) == doctest::Approx(r.stage7));
  }
  // Stage 0 of interleaving holds L (1 + (p-1)/(p v)) layers' worth: 11.5 x L/8 = 1.4375 L.
  CHECK(layers_in_flight(64, pipeline(p, Schedule::interleaved, 2), m, 0) ==
        doctest::Approx(64 * (1 + 7.0 / 16)));
  // Fewer micro-batches than stages cap what is in flight.
  CHECK(microbatches_in_flight(pipeline(p, Schedule::one_f_one_b), 3, 0) == 3);
}

TEST_CASE("Llama 3 405B's layout: 126 layers, pp 16 x 2 chunks, first and last one lighter") {
  // Dubey et al. 2024 Sec. 3.3.2: one layer fewer on the first and the last stage.
  ParallelPlan p = pipeline(16, Schedule::interleaved, 2);
  CHECK_FALSE(layout_splits(126, p));  // 126 on 32 equal chunks does not split
  p.first_stage_layers = p.last_stage_layers = 3;
  REQUIRE(layout_splits(126, p));
  CHECK(chunk_layers(126, p, 0) == 3);
  CHECK(chunk_layers(126, p, 31) == 3);
  CHECK(chunk_layers(126, p, 16) == 4);
  CHECK(stage_layers(126, p, 0) == 7);  // chunks 0 and 16
  CHECK(stage_layers(126, p, 15) == 7);
  CHECK(stage_layers(126, p, 7) == 8);
  int total = 0;
  for (int s = 0; s < 16; ++s) total += stage_layers(126, p, s);
  CHECK(total == 126);
  p.first_stage_layers = 2;  // 121 left for 30 chunks
  CHECK_FALSE(layout_splits(126, p));
}

TEST_CASE("V schedules put the first and last chunk on device 0") {
  const ParallelPlan p = pipeline(4, Schedule::zb_v, 2);
  CHECK(chunk_device(p, 0) == 0);
  CHECK(chunk_device(p, 3) == 3);
  CHECK(chunk_device(p, 4) == 3);
  CHECK(chunk_device(p, 7) == 0);
  CHECK(head_stage(p) == 0);
  CHECK(head_stage(pipeline(4, Schedule::interleaved, 2)) == 3);
}

TEST_CASE("Megatron-Core's micro-batch groups for counts that are not a multiple of pp") {
  // schedules.py: the group size N is in [pp, M] and M mod N is 0 or at least pp.
  const ParallelPlan p = pipeline(8, Schedule::interleaved, 2);
  CHECK(microbatch_group_size(p, 16) == 8);
  CHECK(microbatch_group_size(p, 20) == 10);
  CHECK(microbatch_group_size(p, 17) == 9);  // 17 mod 9 = 8 >= pp
  CHECK(microbatch_group_size(p, 8) == 8);
  // A larger group keeps more forwards in flight: (p-1) 2 + (v-1) N + 1 chunks on stage 0.
  CHECK(microbatches_in_flight(p, 20, 0) == doctest::Approx((7 * 2 + 10 + 1) / 2.0));
}

TEST_CASE("which plans a schedule can run") {
  CHECK(schedule_issue(pipeline(8, Schedule::interleaved, 2), 12) == ScheduleIssue::none);
  CHECK(schedule_issue(pipeline(8, Schedule::interleaved, 2), 4) ==
        ScheduleIssue::too_few_micro_batches);
  CHECK(schedule_issue(pipeline(8, Schedule::interleaved, 1), 16) ==
        ScheduleIssue::needs_virtual_stages);
  CHECK(schedule_issue(pipeline(8, Schedule::zb_v, 3), 16) == ScheduleIssue::two_chunks);
  CHECK(schedule_issue(pipeline(8, Schedule::gpipe, 2), 16) == ScheduleIssue::one_chunk_only);
  CHECK(schedule_issue(pipeline(8, Schedule::dualpipe_v, 2), 15) ==
        ScheduleIssue::too_few_micro_batches);
  CHECK(schedule_issue(pipeline(1, Schedule::zb_h1, 1), 16) == ScheduleIssue::needs_pipeline);
}

TEST_CASE("estimates follow the schedule: zero-bubble shrinks the bubble, GPipe holds more") {
  const ModelSpec m = test::gpt(96, 12288, 96);
  const TrainingSpec t = test::training(2048, 64);
  const ClusterSpec c = test::cluster(64);
  ParallelPlan p = test::plan(1, 8, 8);
  const Estimate base = estimate(m, t, p, c);
  p.schedule = Schedule::zb_h1;
  const Estimate zb = estimate(m, t, p, c);
  CHECK(zb.time.bubble_s < base.time.bubble_s * 0.6);
  CHECK(zb.memory.worst().activations_bytes ==
        doctest::Approx(base.memory.worst().activations_bytes));
  p.schedule = Schedule::gpipe;
  const Estimate gpipe = estimate(m, t, p, c);
  CHECK(gpipe.time.bubble_s == doctest::Approx(base.time.bubble_s));
  CHECK(gpipe.memory.worst().activations_bytes > 7 * base.memory.worst().activations_bytes);
  p.schedule = Schedule::zb_v;
  p.interleave = 2;
  const Estimate zbv = estimate(m, t, p, c);
  CHECK(zbv.time.bubble_s < zb.time.bubble_s);
  CHECK(zbv.memory.worst_stage == 0);  // embedding and LM head both on device 0
}

TEST_CASE("the timeline's span is the step and the slowest stage idles the bubble") {
  // GPT-3 175B, TP 8, PP 8, interleave 2 (Narayanan et al. 2021's shape).
  const ModelSpec m = load_model("gpt3-175b");
  const TrainingSpec t = test::training(2048, 128);
  ParallelPlan p = test::plan(8, 8, 8);
  p.interleave = 2;
  p.schedule = Schedule::interleaved;
  p.sequence_parallel = true;
  p.zero = 1;
  const Estimate e = estimate(m, t, p, test::cluster(512, "dgx-h100"));
  const Timeline tl = build_timeline(p, e);
  REQUIRE(e.simulated.ran);
  CHECK(tl.span_s == doctest::Approx(e.simulated.result.step_s).epsilon(1e-9));
  REQUIRE(tl.stage_names.size() == 8);
  double busy = 0;
  int passes = 0;
  for (const TraceEvent& ev : tl.events) {
    if (ev.process == 1 && ev.track == tl.slowest_stage) {
      busy += ev.duration_s;
      passes += ev.category == "forward";
    }
  }
  CHECK(passes == e.time.micro_batches * 2);  // one forward per micro-batch and chunk
  // The slowest stage's idle time is its bubble and its waits on communication.
  const SimDevice& crit = e.simulated.result.devices[tl.slowest_stage];
  double waits = crit.bubble_s;
  for (double x : crit.exposed_s) waits += x;
  CHECK(tl.span_s - busy == doctest::Approx(waits).epsilon(1e-6));

  // Chrome Trace Event format: complete ("X") events with name, ph, ts, dur, pid, tid.
  const nlohmann::json j = nlohmann::json::parse(trace_json(tl, "gpt3"));
  REQUIRE(j.contains("traceEvents"));
  const auto& events = j.at("traceEvents");
  REQUIRE(events.size() > 100);
  for (const auto& ev : events) {
    const std::string ph = ev.at("ph");
    CHECK((ph == "X" || ph == "M"));
    CHECK(ev.at("pid").is_number_integer());
    if (ph == "X") {
      CHECK(ev.at("ts").get<double>() >= 0);
      CHECK(ev.at("dur").get<double>() > 0);
      CHECK(ev.at("tid").is_number_integer());
      CHECK(ev.at("name").is_string());
    }
  }
}

TEST_CASE("the trace draws a ZeRO-3 reduce-scatter after the backward that produces it") {
  // GPT-3 1.3B under FSDP on 8 GPUs: each unit's gradient reduce-scatter runs after its
  // backward unit, on the data-parallel stream, with its bytes and link as args.
  const ModelSpec m = load_model("gpt3-1.3b");
  const TrainingSpec t = test::training(2048, 16);
  ParallelPlan p = test::plan(8, 1, 1);
  p.zero = 3;
  const Estimate e = estimate(m, t, p, test::cluster(8, "dgx-h100"));
  const Timeline tl = build_timeline(p, e);
  double first_backward_s = 1e30;
  for (const TraceEvent& ev : tl.events) {
    if (ev.process == 1 && ev.category == "backward")
      first_backward_s = std::min(first_backward_s, ev.start_s);
  }
  int reduces = 0;
  for (const TraceEvent& ev : tl.events) {
    if (ev.process != 2 || ev.name.rfind("reduce", 0) != 0) continue;
    ++reduces;
    CHECK(ev.start_s > first_backward_s);
    CHECK(ev.bytes > 0);
    CHECK(ev.group == "DP/FSDP reduce");
    CHECK(ev.link == "scale-up");
  }
  CHECK(reduces == e.time.micro_batches * (m.layers + 2));  // layers, embedding, LM head
}

// The schedule table holds every schedule once, and the parser, the search axis, the chunk
// rules and the torchtitan class names all read it.
TEST_CASE("schedule table: one row per schedule, read by parser, search axis and chunk rules") {
  const std::vector<ScheduleRow>& rows = schedule_rows();
  REQUIRE(rows.size() == 6);
  for (const ScheduleRow& r : rows) {
    CHECK(parse_schedule(r.name, "--schedule") == r.id);
    CHECK(std::string(to_string(r.id)) == r.name);
  }
  CHECK(schedule_names(" | ") == "1f1b | interleaved | gpipe | zb-h1 | zb-v | dualpipe-v");
  CHECK_THROWS_WITH(parse_schedule("pipedream", "--schedule"),
                    doctest::Contains("1f1b, interleaved, gpipe, zb-h1, zb-v, dualpipe-v"));
  // torch.distributed.pipelining.schedules.get_schedule_class's names.
  CHECK(std::string(schedule_row(Schedule::zb_v).torchtitan_class) == "ZBVZeroBubble");
  CHECK(std::string(schedule_row(Schedule::interleaved).torchtitan_class) == "Interleaved1F1B");
  // The V shapes need exactly two chunks, GPipe one, interleaved two or more.
  CHECK(is_v_shape(Schedule::dualpipe_v));
  CHECK_FALSE(is_v_shape(Schedule::zb_h1));
  CHECK(schedule_issue(pipeline(4, Schedule::gpipe, 2), 8) == ScheduleIssue::one_chunk_only);
  CHECK(schedule_issue(pipeline(4, Schedule::interleaved, 1), 8) ==
        ScheduleIssue::needs_virtual_stages);
  CHECK(schedule_issue(pipeline(4, Schedule::zb_v, 3), 8) == ScheduleIssue::two_chunks);
  // DualPipeV fills from both ends: 2 micro-batches per stage.
  CHECK(min_micro_batches(pipeline(4, Schedule::dualpipe_v, 2)) == 8);
}
