// The back-end registry: which back-ends this build has (the only #if in the probe outside the
// back-ends themselves) and starting one, with a clear message when it cannot run here.
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "backends.hpp"
#include "shardplan/error.hpp"

namespace shardplan::probe {

std::vector<std::string> built_backends() {
  std::vector<std::string> out;
#if SHARDPLAN_HAVE_NCCL
  out.emplace_back("nccl");
#endif
#if SHARDPLAN_HAVE_MPI
  out.emplace_back("mpi");
#endif
  return out;
}

#if SHARDPLAN_HAVE_NCCL || SHARDPLAN_HAVE_MPI
namespace {

// A back-end plug-in beside the executable, loaded on first use and never unloaded: its
// libraries (CUDA, NCCL and cuBLASLt; Open MPI and OpenBLAS) load only when a probe starts.
struct Plugin {
  void* handle = nullptr;
  std::string path;
  std::string error;  // why it did not load, or ""

  template <class F>
  F entry(const char* name) const {
    if (!error.empty()) throw InputError("--backend", error);
    void* symbol = dlsym(handle, name);
    if (symbol == nullptr) {
      throw InputError("--backend", fmt::format("{} lacks the entry point {}", path, name));
    }
    return reinterpret_cast<F>(symbol);
  }
};

Plugin load_plugin(const char* file) {
  Plugin p;
  char exe[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  p.path = file;
  if (n > 0) {
    const std::string self(exe, static_cast<size_t>(n));
    p.path = self.substr(0, self.rfind('/') + 1) + file;
  }
  p.handle = dlopen(p.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (p.handle == nullptr) {
    p.error = fmt::format("cannot load the back-end plug-in {}: {} (it is built beside the "
                          "executable by `cmake --build build --target shardplan_tool`)",
                          p.path, dlerror());
  }
  return p;
}

}  // namespace
#endif

#if SHARDPLAN_HAVE_NCCL
namespace {
const Plugin& nccl_plugin() {
  static const Plugin plugin = load_plugin(SHARDPLAN_NCCL_PLUGIN);
  return plugin;
}
}  // namespace

std::string nccl_unavailable() {
  const Plugin& p = nccl_plugin();
  if (!p.error.empty()) return p.error;
  try {
    return p.entry<const char* (*)()>("shardplan_nccl_unavailable")();
  } catch (const InputError& e) {
    return e.what();
  }
}

std::unique_ptr<Backend> make_nccl_backend(Control& control, Watchdog& watchdog) {
  return std::unique_ptr<Backend>(nccl_plugin().entry<Backend* (*)(Control*, Watchdog*)>(
      "shardplan_make_nccl_backend")(&control, &watchdog));
}
#endif

#if SHARDPLAN_HAVE_MPI
namespace {
const Plugin& mpi_plugin() {
  static const Plugin plugin = load_plugin(SHARDPLAN_MPI_PLUGIN);
  return plugin;
}
}  // namespace

std::unique_ptr<Control> make_mpi_control() {
  return std::unique_ptr<Control>(
      mpi_plugin().entry<Control* (*)()>("shardplan_make_mpi_control")());
}

std::unique_ptr<Backend> make_mpi_backend(Control& mpi_control, Watchdog& watchdog) {
  return std::unique_ptr<Backend>(mpi_plugin().entry<Backend* (*)(Control*, Watchdog*)>(
      "shardplan_make_mpi_backend")(&mpi_control, &watchdog));
}
#endif

bool launched_by_mpi() {
  // Open MPI, MPICH/Hydra, PMIx launchers and Slurm's srun with more than one task.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  const char* tasks = std::getenv("SLURM_NTASKS");
  return tasks != nullptr && std::atoi(tasks) > 1 && std::getenv("SLURM_PROCID") != nullptr;
}

namespace {

[[noreturn, maybe_unused]] void not_built(const std::string& name) {
  const char* how = name == "nccl"
                        ? "CMake found no CUDA toolkit or NCCL: set NCCL_ROOT to the folder with "
                          "include/nccl.h and lib/libnccl.so* and configure with "
                          "-DSHARDPLAN_WITH_CUDA=ON"
                        : "CMake found no MPI or BLAS: install libopenmpi-dev and "
                          "libopenblas-dev and configure with -DSHARDPLAN_WITH_MPI=ON";
  const auto built = built_backends();
  std::string list;
  for (const auto& b : built) list += (list.empty() ? "" : ", ") + b;
  throw InputError("--backend", fmt::format("the {} back-end is not built into this binary ({}); "
                                            "built: {}",
                                            name, how, list.empty() ? "none" : list));
}

// Why `auto` cannot take NCCL here, or "" when it can.
std::string nccl_reason() {
#if SHARDPLAN_HAVE_NCCL
  return nccl_unavailable();
#else
  return "the nccl back-end is not built into this binary";
#endif
}

}  // namespace

Launch start_backend(const std::string& name, const Settings& settings) {
  if (name != "auto" && name != "nccl" && name != "mpi") {
    throw InputError("--backend",
                     fmt::format("'{}' is not a back-end; use auto, nccl or mpi", name));
  }
  Launch launch;
  std::string chosen = name;
  if (name == "auto") {
    const std::string why = nccl_reason();
    chosen = why.empty() ? "nccl" : "mpi";
    if (!why.empty())
      launch.note = fmt::format("--backend auto: nccl cannot run ({}); using mpi", why);
  }
  if (chosen == "nccl") {
#if SHARDPLAN_HAVE_NCCL
    const std::string why = nccl_unavailable();
    if (!why.empty()) {
      throw InputError("--backend nccl", why + "; on a machine without a GPU use --backend mpi");
    }
#if SHARDPLAN_HAVE_MPI
    launch.control = launched_by_mpi() ? make_mpi_control() : make_local_control();
#else
    if (launched_by_mpi()) {
      throw InputError("--backend nccl",
                       "started by mpirun/srun, but this binary has no MPI to "
                       "share NCCL ids; rebuild with MPI or start one process "
                       "that drives every local GPU");
    }
    launch.control = make_local_control();
#endif
    launch.watchdog = std::make_unique<Watchdog>(*launch.control, settings.timeout_s);
    launch.backend = make_nccl_backend(*launch.control, *launch.watchdog);
    return launch;
#else
    not_built("nccl");
#endif
  }
#if SHARDPLAN_HAVE_MPI
  launch.control = make_mpi_control();
  launch.watchdog = std::make_unique<Watchdog>(*launch.control, settings.timeout_s);
  launch.backend = make_mpi_backend(*launch.control, *launch.watchdog);
  return launch;
#else
  if (name == "auto") {
    throw InputError("--backend", fmt::format("no back-end can run here: {}; and the mpi "
                                              "back-end is not built",
                                              nccl_reason()));
  }
  not_built("mpi");
#endif
}

}  // namespace shardplan::probe
