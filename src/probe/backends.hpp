// The back-ends' factories, for the registry: each back-end is a plug-in built only when its
// libraries are found, and only registry.cpp asks which ones are (the one place with #if).
#pragma once

#include <memory>
#include <string>

#include "backend.hpp"
#include "control.hpp"

namespace shardplan::probe {

/// A started back-end: its control plane, the watchdog over it and the back-end (what a Session
/// holds).
struct Launch {
  std::unique_ptr<Control> control;
  std::unique_ptr<Watchdog> watchdog;
  std::unique_ptr<Backend> backend;
  std::string note;  // why `auto` picked what it picked
};
/// Starts `name` (auto | nccl | mpi); see start_session.
Launch start_backend(const std::string& name, const Settings& settings);

/// Whether mpirun, srun or another PMI launcher started this process (its environment says so).
bool launched_by_mpi();

// MPI (control_mpi.cpp and backend_mpi.cpp, the plug-in libshardplan_mpi.so): Open MPI
// collectives and OpenBLAS GEMMs. The registry reaches it through two C entry points:
//   Control* shardplan_make_mpi_control();
//   Backend* shardplan_make_mpi_backend(Control*, Watchdog*);
std::unique_ptr<Control> make_mpi_control();
std::unique_ptr<Backend> make_mpi_backend(Control& mpi_control, Watchdog& watchdog);

// NCCL (backend_nccl.cpp, the plug-in libshardplan_nccl.so): CUDA runtime, NCCL and cuBLASLt,
// one rank per GPU. The registry reaches it through two C entry points:
//   const char* shardplan_nccl_unavailable();  // why it cannot run here, or ""
//   Backend* shardplan_make_nccl_backend(Control*, Watchdog*);
/// Why NCCL cannot run here (no driver, no GPU, the plug-in or libnccl missing), or "".
std::string nccl_unavailable();
std::unique_ptr<Backend> make_nccl_backend(Control& control, Watchdog& watchdog);

}  // namespace shardplan::probe
