// The event loop: a task starts when its stream's previous task and its dependencies are done;
// the transfers on one link share its bandwidth equally while they overlap (processor sharing,
// the fair share NCCL's channels get on one NIC); completions are processed in time order, ties
// by task order, so equal inputs give equal events.
#include "simulate_graph.hpp"

#include <algorithm>
#include <queue>

namespace shardplan::sim {

Graph::Graph(int device_count)
    : last_in_stream(static_cast<size_t>(device_count) * kSimStreams, -1), devices(device_count) {}

void Graph::reset(int device_count) {
  tasks.clear();
  pending.clear();
  edges.clear();
  last_in_stream.assign(static_cast<size_t>(device_count) * kSimStreams, -1);
  devices = device_count;
}

int Graph::add(const SimEvent& what, double duration_s) {
  const int id = static_cast<int>(tasks.size());
  Task t;
  t.duration_s = std::max(0.0, duration_s);
  t.event = what;
  int& last = last_in_stream[static_cast<size_t>(what.device) * kSimStreams +
                             static_cast<int>(what.stream)];
  if (last >= 0) tasks[last].next_in_stream = id;
  pending.push_back(last >= 0 ? 1 : 0);
  last = id;
  tasks.push_back(t);
  return id;
}

int Graph::attach(int host, const SimEvent& what, double duration_s) {
  const int id = static_cast<int>(tasks.size());
  Task t;
  t.duration_s = std::max(0.0, duration_s);
  t.event = what;
  t.host = host;
  t.next_attached = tasks[host].first_attached;
  tasks[host].first_attached = id;
  pending.push_back(0);
  tasks.push_back(t);
  return id;
}

void Graph::depend(int from, int to) {
  if (from < 0 || to < 0) return;
  edges.emplace_back(from, to);
  ++pending[to];
}

namespace {

struct Pending {
  double time_s;
  int id;
  bool operator>(const Pending& o) const {
    return time_s != o.time_s ? time_s > o.time_s : id > o.id;
  }
};

// The state of one run: the heap of completions, what runs on each device now, when each
// link frees up.
struct Loop {
  Graph& g;
  double slowdown;
  std::vector<int>& succ_begin;       // successors, by task (storage reused across runs)
  std::vector<int>& succ;
  std::vector<int> running_compute;   // per device
  std::vector<int> running_comm;      // per device x stream: the last communication started
  struct LinkState {
    std::vector<int> active;  // transfers on it now
    double updated_s = 0;     // when their remaining_s was last brought up to date
  };
  std::vector<LinkState> links;  // per device x link
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> heap;

  Loop(Graph& graph, double overlap_slowdown, std::vector<int>& successor_begin,
       std::vector<int>& successors)
      : g(graph), slowdown(overlap_slowdown), succ_begin(successor_begin), succ(successors) {
    const size_t n = g.tasks.size();
    succ_begin.assign(n + 1, 0);
    for (const auto& e : g.edges) ++succ_begin[e.first + 1];
    for (size_t i = 0; i < n; ++i) succ_begin[i + 1] += succ_begin[i];
    succ.resize(g.edges.size());
    std::vector<int> fill(succ_begin.begin(), succ_begin.end() - 1);
    for (const auto& e : g.edges) succ[fill[e.first]++] = e.second;
    running_compute.assign(g.devices, -1);
    running_comm.assign(static_cast<size_t>(g.devices) * kSimStreams, -1);
    links.assign(static_cast<size_t>(g.devices) * 3, LinkState{});
  }

  // Compute beside communication on the same GPU loses overlap_slowdown of the overlap; the
  // later of the two to start counts it, so each overlap is counted once.
  void slow_compute_for(const Task& comm) {
    const int c = running_compute[comm.event.device];
    if (c < 0 || slowdown <= 0) return;
    Task& host = g.tasks[c];
    const double overlap = std::min(comm.duration_s, host.end_s - comm.start_s);
    if (overlap <= 0) return;
    host.end_s += slowdown * overlap;
    host.contention_s += slowdown * overlap;
    heap.push({host.end_s, c});
  }
  double slowdown_beside(const Task& t) const {
    if (slowdown <= 0) return 0;
    double lost = 0;
    for (int s = 1; s < kSimStreams; ++s) {
      const int c = running_comm[static_cast<size_t>(t.event.device) * kSimStreams + s];
      if (c >= 0) lost += std::max(0.0, std::min(t.duration_s, g.tasks[c].end_s - t.start_s));
    }
    return slowdown * lost;
  }

  LinkState* link_of(const Task& t) {
    if (t.event.link == SimLink::none) return nullptr;
    return &links[static_cast<size_t>(t.event.device) * 3 + static_cast<int>(t.event.link)];
  }
  // Brings the link's transfers to `now` at 1/n of the bandwidth each, then sets their ends
  // for the new count.
  void reshare(LinkState& l, double now_s, int joining, int leaving) {
    const double n = static_cast<double>(l.active.size());
    for (int id : l.active) g.tasks[id].remaining_s -= (now_s - l.updated_s) / n;
    l.updated_s = now_s;
    if (leaving >= 0) std::erase(l.active, leaving);
    if (joining >= 0) l.active.push_back(joining);
    const double share = static_cast<double>(l.active.size());
    for (int id : l.active) {
      Task& t = g.tasks[id];
      t.end_s = now_s + std::max(0.0, t.remaining_s) * share;
      heap.push({t.end_s, id});
    }
  }

  void start_comm(int id, double at_s) {
    Task& t = g.tasks[id];
    t.start_s = at_s;
    t.end_s = at_s + t.duration_s;
    t.remaining_s = t.duration_s;
    running_comm[static_cast<size_t>(t.event.device) * kSimStreams +
                 static_cast<int>(t.event.stream)] = id;
    if (LinkState* l = link_of(t)) {
      reshare(*l, at_s, id, -1);
    } else {
      heap.push({t.end_s, id});
    }
    slow_compute_for(t);
  }

  void start(int id, double at_s) {
    Task& t = g.tasks[id];
    t.ready_s = at_s;
    if (t.event.stream != SimStream::compute) {
      start_comm(id, at_s);
      return;
    }
    t.start_s = at_s;
    t.end_s = at_s + t.duration_s;
    t.contention_s = slowdown_beside(t);
    t.end_s += t.contention_s;
    running_compute[t.event.device] = id;
    for (int a = t.first_attached; a >= 0; a = g.tasks[a].next_attached) {
      g.tasks[a].ready_s = at_s;
      start_comm(a, at_s);
    }
    heap.push({t.end_s, id});
  }

  void release(int from, int to, double at_s) {
    if (--g.pending[to] == 0) {
      g.tasks[to].released_by = from;
      start(to, at_s);
    }
  }

  void finish(int id) {
    Task& t = g.tasks[id];
    t.done = true;
    if (t.event.stream != SimStream::compute) {
      if (LinkState* l = link_of(t)) reshare(*l, t.end_s, -1, id);
    }
    if (t.next_in_stream >= 0) release(id, t.next_in_stream, t.end_s);
    for (int k = succ_begin[id]; k < succ_begin[id + 1]; ++k) release(id, succ[k], t.end_s);
  }
};

}  // namespace

bool run(Graph& g, double overlap_slowdown) {
  thread_local std::vector<int> succ_begin, succ;
  Loop loop(g, overlap_slowdown, succ_begin, succ);
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    if (g.pending[i] == 0 && g.tasks[i].host < 0) loop.start(static_cast<int>(i), 0.0);
  }
  while (!loop.heap.empty()) {
    const Pending next = loop.heap.top();
    loop.heap.pop();
    const Task& t = g.tasks[next.id];
    if (t.done || next.time_s != t.end_s) continue;  // stale: the task was slowed since
    loop.finish(next.id);
  }
  return std::all_of(g.tasks.begin(), g.tasks.end(), [](const Task& t) { return t.done; });
}

namespace {

// The idle span [from_s, to_s] of a device's compute stream, charged to what it waited on: a
// transfer's time on its link is exposed communication of that transfer's stream, and the part
// before the transfer was released is the wait on its own producer, charged the same way in
// turn; a wait on a compute pass (another device's, or none) is bubble.
void charge_wait(const Graph& g, int by, double from_s, double to_s, SimDevice& dev) {
  // Release times only go back along a chain, which ends; the count guards a malformed graph.
  for (size_t hops = 0; to_s - from_s > 1e-15 && hops < g.tasks.size(); ++hops) {
    if (by < 0 || g.tasks[by].event.stream == SimStream::compute) break;
    const Task& c = g.tasks[by];
    const double wire_from = std::clamp(c.ready_s, from_s, to_s);
    const double wire_to = std::clamp(c.end_s, from_s, to_s);
    dev.exposed_s[static_cast<int>(c.event.stream)] += wire_to - wire_from;
    dev.bubble_s += to_s - wire_to;  // the transfer ended before the pass began: another wait
    to_s = wire_from;
    by = c.released_by;
  }
  dev.bubble_s += std::max(0.0, to_s - from_s);
}

}  // namespace

void account(const Graph& g, bool keep_events, SimResult& r) {
  r.devices.assign(g.devices, SimDevice{});
  std::vector<double> prev_end(g.devices, 0.0);
  std::vector<int> last_comm(g.devices, -1);  // each device's transfer that ends last
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    const Task& t = g.tasks[i];
    r.step_s = std::max(r.step_s, t.end_s);
    int& last = last_comm[t.event.device];
    if (t.event.stream != SimStream::compute && (last < 0 || t.end_s > g.tasks[last].end_s))
      last = static_cast<int>(i);
  }
  for (const Task& t : g.tasks) {
    if (t.event.stream != SimStream::compute) continue;
    SimDevice& dev = r.devices[t.event.device];
    charge_wait(g, t.released_by, prev_end[t.event.device], t.start_s, dev);
    prev_end[t.event.device] = t.end_s;
    if (t.event.kind == SimTaskKind::optimizer) {
      dev.optimizer_s += t.end_s - t.start_s;
    } else {
      dev.compute_s += t.end_s - t.start_s;
      dev.contention_s += t.contention_s;
    }
  }
  // After a device's last pass: its transfers still on the wire (a gradient sync or parameter
  // gather the step ends on) are exposed, and the rest is the wait for the slowest device.
  for (int d = 0; d < g.devices; ++d) {
    charge_wait(g, last_comm[d], prev_end[d], r.step_s, r.devices[d]);
    if (r.devices[d].compute_s > r.devices[r.critical_device].compute_s + 1e-12)
      r.critical_device = d;
  }
  if (!keep_events) return;
  std::vector<std::pair<double, int>> order(g.tasks.size());  // (start, task): sorts in cache
  for (size_t i = 0; i < order.size(); ++i) order[i] = {g.tasks[i].start_s, static_cast<int>(i)};
  std::sort(order.begin(), order.end());
  r.events.reserve(order.size());
  for (const auto& [start_s, id] : order) {
    SimEvent e = g.tasks[id].event;
    e.start_s = g.tasks[id].start_s;
    e.end_s = g.tasks[id].end_s;
    r.events.push_back(e);
  }
}

}  // namespace shardplan::sim
