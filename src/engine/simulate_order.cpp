// The order each pipeline rank issues its passes in, per schedule: what the simulator replays.
// Each order is the framework's own issue order, named by its source file and function; and the
// orders' names as the reports print them.
#include <algorithm>
#include <deque>
#include <utility>

#include "shardplan/simulate.hpp"

namespace shardplan {
namespace {

// Writes one device's passes, numbering each virtual stage's micro-batches as they pass.
struct OrderWriter {
  std::vector<SimPass>& out;
  std::vector<int>& next_f;  // per virtual stage: the next micro-batch to run forward
  std::vector<int>& next_b;
  int first_mb = 0;  // DualPipe: the up pipeline's micro-batches start at m/2
  int up_from = -1;  // DualPipe: stages from here on carry the up pipeline's micro-batches
  std::deque<std::pair<int, int>> pending_w;  // split backwards whose W has not run
  bool pair = false;  // SimInput::pair_passes

  int base(int vs) const { return up_from >= 0 && vs >= up_from ? first_mb : 0; }
  void forward(int vs) { out.push_back({SimTaskKind::forward, vs, base(vs) + next_f[vs]++}); }
  void backward(int vs, bool split) {
    const int mb = base(vs) + next_b[vs]++;
    if (!split) {
      out.push_back({SimTaskKind::backward, vs, mb});
      return;
    }
    out.push_back({SimTaskKind::input_grad, vs, mb});
    pending_w.emplace_back(vs, mb);
  }
  void weight() {
    if (pending_w.empty()) return;  // as DualPipe's WeightGradStore: nothing queued, nothing run
    out.push_back({SimTaskKind::weight_grad, pending_w.front().first, pending_w.front().second});
    pending_w.pop_front();
  }
  void weights_left() {
    while (!pending_w.empty()) weight();
  }
  // DualPipe's _forward_backward_chunk: a forward and a full backward issued as one when the
  // module overlaps them (overlapped_forward_backward); otherwise the forward, then the backward.
  void overlapped(int fvs, int bvs) {
    if (!pair) {
      forward(fvs);
      backward(bvs, false);
      return;
    }
    const int fmb = base(fvs) + next_f[fvs]++;
    const int bmb = base(bvs) + next_b[bvs]++;
    out.push_back({SimTaskKind::overlapped, fvs, fmb, bvs, bmb});
  }
};

// GPipe: every forward, then every backward (torch.distributed.pipelining ScheduleGPipe).
void gpipe(OrderWriter& w, int vs, int m) {
  for (int i = 0; i < m; ++i) w.forward(vs);
  for (int i = 0; i < m; ++i) w.backward(vs, false);
}

// 1F1B (Megatron-Core forward_backward_pipelining_without_interleaving): p - d - 1 warm-up
// forwards, then a forward and a backward each, then the cool-down backwards. With `split`
// (ZB-H1) each W waits behind `lag` later B passes, so stage d keeps d of them for the drain.
// Paired (combined 1F1B, SimInput::pair_passes): one more warm-up forward, then each steady-state
// forward issued with the backward beside it.
void one_f_one_b(OrderWriter& w, int vs, int d, int p, int m, bool split, int lag) {
  const bool pair = w.pair && !split;
  const int warm = std::min(p - d - 1 + (pair ? 1 : 0), m);
  for (int i = 0; i < warm; ++i) w.forward(vs);
  for (int i = 0; i < m; ++i) {
    if (pair && warm + i < m) {
      w.overlapped(vs, vs);
      continue;
    }
    if (warm + i < m) w.forward(vs);
    w.backward(vs, split);
    if (split && static_cast<int>(w.pending_w.size()) > lag) w.weight();
  }
  w.weights_left();
}

// Megatron-Core's interleaved 1F1B (forward_backward_pipelining_with_interleaving): virtual
// micro-batches k in groups of g micro-batches per model chunk (get_schedule_table), the
// backward's chunk counted from the last, warm-up (p - d - 1) 2 + (v - 1) g. Paired: the combined
// 1F1B's steady state, forward_backward_helper_wrapper(f_virtual_microbatch_id = k + warm-up,
// b_virtual_microbatch_id = k) as one pass, after one more warm-up forward.
void interleaved(OrderWriter& w, int d, int p, int v, int m, int g, bool split, int lag) {
  std::vector<std::pair<int, int>> table;  // (micro-batch, chunk)
  for (int first = 0; first < m; first += g) {
    const int last = first + g >= m ? m : first + g;
    for (int c = 0; c < v; ++c)
      for (int mb = first; mb < last; ++mb) table.emplace_back(mb, c);
  }
  const int total = m * v;
  const bool pair = w.pair && !split;
  const int warm = std::min((p - d - 1) * 2 + (v - 1) * g + (pair ? 1 : 0), total);
  auto vs_of = [&](int c) { return c * p + d; };
  for (int k = 0; k < warm; ++k) w.forward(vs_of(table[k].second));
  for (int k = 0; k < total; ++k) {
    if (pair && warm + k < total) {
      w.overlapped(vs_of(table[warm + k].second), vs_of(v - 1 - table[k].second));
      continue;
    }
    if (warm + k < total) w.forward(vs_of(table[warm + k].second));
    w.backward(vs_of(v - 1 - table[k].second), split);
    if (split && static_cast<int>(w.pending_w.size()) > lag) w.weight();
  }
  w.weights_left();
}

// ZB-V as PyTorch's ScheduleZBVZeroBubble._calculate_single_rank_operations issues it: chunk 0
// is virtual stage d, chunk 1 stage 2p - 1 - d; micro-batches counted up to max(2p - 1, m) and
// those past m dropped.
void zb_v(OrderWriter& w, int d, int p, int m) {
  const int n = std::max(2 * p - 1, m);
  const int s0 = d, s1 = 2 * p - 1 - d;
  std::vector<SimPass> all;
  std::vector<SimPass>& out = w.out;
  auto add = [&](SimTaskKind k, int vs, int mb) { all.push_back({k, vs, mb}); };
  int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  for (int i = 0; i < 2 * (p - d) - 1; ++i) add(SimTaskKind::forward, s0, f0++);
  for (int i = 0; i < d; ++i) {
    add(SimTaskKind::forward, s1, f1++);
    add(SimTaskKind::forward, s0, f0++);
  }
  for (int i = 0; i < p - d; ++i) {
    add(SimTaskKind::forward, s1, f1++);
    add(SimTaskKind::input_grad, s1, b1);
    add(SimTaskKind::weight_grad, s1, b1++);
  }
  while (f1 < f0 || f0 < n) {
    if (f0 < n) add(SimTaskKind::forward, s0, f0++);
    add(SimTaskKind::input_grad, s0, b0);
    add(SimTaskKind::weight_grad, s0, b0++);
    add(SimTaskKind::forward, s1, f1++);
    add(SimTaskKind::input_grad, s1, b1);
    add(SimTaskKind::weight_grad, s1, b1++);
  }
  int w0 = b0, w1 = b1;
  for (int i = 0; i < d; ++i) {
    add(SimTaskKind::input_grad, s0, b0++);
    add(SimTaskKind::input_grad, s1, b1++);
  }
  for (int i = 0; i < p - d; ++i) {
    add(SimTaskKind::input_grad, s0, b0++);
    add(SimTaskKind::weight_grad, s0, w0++);
  }
  while (w1 < b1) add(SimTaskKind::weight_grad, s1, w1++);
  while (w0 < b0) add(SimTaskKind::weight_grad, s0, w0++);
  for (const SimPass& x : all)
    if (x.micro_batch < m) out.push_back(x);
}

// DualPipe's and DualPipeV's eight steps (dualpipe.py / dualpipev.py, DualPipe*.step): `r` the
// rank's place from its pipeline's end (half_rank in DualPipe), `n` the ranks of one pipe
// (num_half_ranks), `chunks` the micro-batches of one pipe (half_num_chunks), s0 / s1 the
// rank's early and late stage, `special` the rank whose first main step runs F and B apart.
void dualpipe_steps(OrderWriter& w, int r, int n, int chunks, int s0, int s1, bool special) {
  for (int i = 0; i < (n - r - 1) * 2; ++i) w.forward(s0);  // step 1: nF0
  for (int i = 0; i < r + 1; ++i) {                         // step 2: nF0F1
    w.forward(s0);
    w.forward(s1);
  }
  for (int i = 0; i < n - r - 1; ++i) {  // step 3: nB1W1F1, zero bubble
    w.backward(s1, true);
    w.weight();
    w.forward(s1);
  }
  for (int i = 0; i < chunks - n * 2 + r + 1; ++i) {  // step 4, the main step: nF0B1F1B0
    if (i == 0 && special) {
      w.forward(s0);
      w.backward(s1, false);
    } else {
      w.overlapped(s0, s1);
    }
    w.overlapped(s1, s0);
  }
  for (int i = 0; i < n - r - 1; ++i) {  // step 5: nB1F1B0
    w.backward(s1, false);
    w.overlapped(s1, s0);
  }
  bool zb = false;  // step 6: nB1B0, the second half of them split
  for (int i = 0; i < r + 1; ++i) {
    if (i == (r + 1) / 2 && r % 2 == 1) zb = true;
    w.backward(s1, zb);
    if (i == (r + 1) / 2 && r % 2 == 0) zb = true;
    w.backward(s0, zb);
  }
  for (int i = 0; i < n - r - 1; ++i) {  // step 7: nWB0
    w.weight();
    w.backward(s0, true);
  }
  w.weights_left();  // step 8: nW
}

}  // namespace

std::vector<std::vector<SimPass>> issue_order(const SimInput& in) {
  const int p = in.devices, m = in.micro_batches;
  const int v = p > 0 ? static_cast<int>(in.stages.size()) / p : 1;
  const int g = in.group_size > 0 ? in.group_size : p;
  std::vector<std::vector<SimPass>> orders(p);
  std::vector<int> next_f(in.stages.size(), 0), next_b(in.stages.size(), 0);
  // ZB-H1 keeps d of stage d's W passes for the drain, where the B passes of later stages
  // leave it idle (Qi et al. 2024 Fig. 3).
  for (int d = 0; d < p; ++d) {
    OrderWriter w{orders[d], next_f, next_b, 0, -1, {}, in.pair_passes};
    const bool split = in.order == SimOrder::zb_h1;
    switch (in.order) {
      case SimOrder::gpipe:
        gpipe(w, d, m);
        break;
      case SimOrder::one_f_one_b:
      case SimOrder::interleaved:
      case SimOrder::zb_h1:
        if (v == 1) {
          one_f_one_b(w, d, d, p, m, split, d);
        } else {
          interleaved(w, d, p, v, m, g, split, d);
        }
        break;
      case SimOrder::zb_v:
        zb_v(w, d, p, m);
        break;
      case SimOrder::dualpipe_v:
        dualpipe_steps(w, d, p, m, d, 2 * p - 1 - d, d == p - 1);
        break;
      case SimOrder::dualpipe: {
        // Rank d holds stage d of the down pipeline (virtual stage d) and stage p - 1 - d of
        // the up one (p + p - 1 - d); its early stage is the one nearer its pipeline's start.
        const int half = std::min(d, p - 1 - d);
        const int down = d, up = p + (p - 1 - d);
        const bool first_half = d < p / 2;
        w.first_mb = m / 2;
        w.up_from = p;
        dualpipe_steps(w, half, p / 2, m / 2, first_half ? down : up, first_half ? up : down,
                       half == p / 2 - 1);
        break;
      }
    }
  }
  return orders;
}

const char* to_string(SimOrder o) {
  switch (o) {
    case SimOrder::gpipe:
      return "gpipe";
    case SimOrder::one_f_one_b:
      return "1f1b";
    case SimOrder::interleaved:
      return "interleaved";
    case SimOrder::zb_h1:
      return "zb-h1";
    case SimOrder::zb_v:
      return "zb-v";
    case SimOrder::dualpipe_v:
      return "dualpipev";
    case SimOrder::dualpipe:
      return "dualpipe";
  }
  return "?";
}

}  // namespace shardplan
