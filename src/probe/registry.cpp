// The back-end registry: which back-ends this build has (the only #if in the probe outside the
// back-ends themselves) and starting one, with a clear message when it cannot run here.
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

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

#if SHARDPLAN_HAVE_NCCL
namespace {

// The NCCL plug-in beside the executable, loaded once on first use and never unloaded.
struct NcclPlugin {
  const char* (*unavailable)() = nullptr;
  Backend* (*make)(Control*, Watchdog*) = nullptr;
  std::string error;
};

const NcclPlugin& nccl_plugin() {
  static const NcclPlugin plugin = [] {
    NcclPlugin p;
    char exe[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    std::string path = SHARDPLAN_NCCL_PLUGIN;
    if (n > 0) {
      const std::string self(exe, static_cast<size_t>(n));
      path = self.substr(0, self.rfind('/') + 1) + SHARDPLAN_NCCL_PLUGIN;
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      p.error = fmt::format("cannot load the nccl back-end ({}): {}", path, dlerror());
      return p;
    }
    p.unavailable =
        reinterpret_cast<const char* (*)()>(dlsym(handle, "shardplan_nccl_unavailable"));
    p.make = reinterpret_cast<Backend* (*)(Control*, Watchdog*)>(
        dlsym(handle, "shardplan_make_nccl_backend"));
    if (p.unavailable == nullptr || p.make == nullptr) {
      p.error = fmt::format("{} lacks the shardplan_nccl_* entry points", path);
    }
    return p;
  }();
  return plugin;
}

}  // namespace

std::string nccl_unavailable() {
  const NcclPlugin& p = nccl_plugin();
  return p.error.empty() ? p.unavailable() : p.error;
}

std::unique_ptr<Backend> make_nccl_backend(Control& control, Watchdog& watchdog) {
  return std::unique_ptr<Backend>(nccl_plugin().make(&control, &watchdog));
}
#endif

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
