// The reference the netns test holds the probe to: a plain blocking MPI_Allreduce of float sums,
// timed as the probe times it (back-to-back iterations after warm-ups; each rank's mean and
// median iteration, each averaged over ranks), with MPI_Init and nothing else: no threads, no
// polling.
//   mpi_allreduce_ref ITERS WARMUP BYTES...   prints "BYTES MEAN_US MEDIAN_US" per size on rank 0
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 4) {
    if (rank == 0) std::fprintf(stderr, "usage: mpi_allreduce_ref ITERS WARMUP BYTES...\n");
    MPI_Finalize();
    return 2;
  }
  const int iters = std::atoi(argv[1]);
  const int warmup = std::atoi(argv[2]);
  for (int a = 3; a < argc; ++a) {
    const size_t bytes = std::stoull(argv[a]);
    const int count = static_cast<int>(bytes / sizeof(float));
    std::vector<float> send(static_cast<size_t>(count), 1.0f), recv(static_cast<size_t>(count));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < warmup; ++i) {
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    std::vector<double> times_s;
    for (int i = 0; i < iters; ++i) {
      const double start = MPI_Wtime();
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      times_s.push_back(MPI_Wtime() - start);
    }
    double mine[2] = {0, 0};  // mean, median
    for (double t : times_s) mine[0] += t / iters;
    std::sort(times_s.begin(), times_s.end());
    const size_t mid = times_s.size() / 2;
    mine[1] = times_s.size() % 2 ? times_s[mid] : (times_s[mid - 1] + times_s[mid]) / 2;
    double sum[2] = {0, 0};
    MPI_Reduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) std::printf("%zu %.3f %.3f\n", bytes, sum[0] / size * 1e6, sum[1] / size * 1e6);
    if (recv[0] != static_cast<float>(size)) {
      std::fprintf(stderr, "mpi_allreduce_ref: rank %d: sum %g, expected %d\n", rank,
                   static_cast<double>(recv[0]), size);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  MPI_Finalize();
  return 0;
}
