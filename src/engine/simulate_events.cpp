// The simulator's names: streams, links and task kinds as the trace and the reports print them.
#include "shardplan/simulate_events.hpp"

namespace shardplan {

const char* to_string(SimStream s) {
  switch (s) {
    case SimStream::compute:
      return "compute";
    case SimStream::tp:
      return "TP";
    case SimStream::cp:
      return "CP";
    case SimStream::ep:
      return "EP dispatch/combine";
    case SimStream::dp_gather:
      return "DP/FSDP gather";
    case SimStream::dp_reduce:
      return "DP/FSDP reduce";
    case SimStream::pp:
      return "PP send/recv";
  }
  return "?";
}

const char* to_string(SimLink l) {
  switch (l) {
    case SimLink::none:
      return "none";
    case SimLink::scale_up:
      return "scale-up";
    case SimLink::scale_out:
      return "scale-out";
  }
  return "?";
}

const char* to_string(SimTaskKind k) {
  switch (k) {
    case SimTaskKind::forward:
      return "F";
    case SimTaskKind::input_grad:
      return "B";
    case SimTaskKind::weight_grad:
      return "W";
    case SimTaskKind::backward:
      return "BW";
    case SimTaskKind::overlapped:
      return "F&B";
    case SimTaskKind::optimizer:
      return "optimizer";
    case SimTaskKind::send:
      return "send";
    case SimTaskKind::tp:
      return "TP";
    case SimTaskKind::cp:
      return "CP";
    case SimTaskKind::all_to_all:
      return "all-to-all";
    case SimTaskKind::param_gather:
      return "gather";
    case SimTaskKind::grad_reduce:
      return "reduce";
  }
  return "?";
}

}  // namespace shardplan
