// The op list: FLOPs of a GPT layer against Narayanan et al. 2021 Eq. 3.
#include "shardplan/layer.hpp"

#include <doctest/doctest.h>

#include "support.hpp"

using namespace shardplan;

TEST_CASE("forward GEMM FLOPs of a GPT layer are 24 b s h^2 (1 + s/(6h))") {
  // Narayanan et al. 2021 Sec. 5.1: a layer's forward is 24 B s h^2 (1 + s/(6h)) FLOPs.
  const ModelSpec m = test::gpt(1, 4096, 32);
  TrainingSpec t = test::training(2048, 1);
  t.attention = AttentionKind::standard;
  const ParallelPlan p = test::plan(1, 1, 1, 4);
  double flops = 0;
  for (const Op& op : describe_micro_batch(m, t, p).layer.ops) flops += op.flops;
  const double b = 4, s = 2048, h = 4096;
  CHECK(flops == doctest::Approx(24 * b * s * h * h * (1 + s / (6 * h))));
}

TEST_CASE("tensor parallel divides every GEMM's FLOPs") {
  const ModelSpec m = test::gpt(1, 4096, 32);
  TrainingSpec t = test::training(2048, 1);
  t.attention = AttentionKind::standard;
  ParallelPlan p = test::plan(1, 1, 1);
  double one = 0, eight = 0;
  for (const Op& op : describe_micro_batch(m, t, p).layer.ops) one += op.flops;
  p.tp = 8;
  for (const Op& op : describe_micro_batch(m, t, p).layer.ops) eight += op.flops;
  CHECK(eight * 8 == doctest::Approx(one));
}

TEST_CASE("flash attention executes half the causal score FLOPs") {
  const ModelSpec m = test::gpt(1, 4096, 32);
  TrainingSpec t = test::training(2048, 1);
  const ParallelPlan p = test::plan(1, 1, 1);
  for (const Op& op : describe_micro_batch(m, t, p).layer.ops) {
    if (op.kind == OpKind::attention) {
      CHECK(op.flops == doctest::Approx(0.5 * 4 * 2048.0 * 2048 * 4096));
      CHECK(op.backward_flops == doctest::Approx(2.5 * op.flops));
    }
  }
}
