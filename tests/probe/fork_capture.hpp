// Runs a piece of the probe that ends its process (the watchdog's report and exit 3) in a child,
// and hands back what it wrote to stderr and how it ended.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace shardplan::test {

struct Forked {
  bool exited = false;  // ended by exit, not by a signal
  int status = -1;      // its exit status
  std::string err;      // everything it wrote to stderr
};

/// `body` runs in a forked child with stderr captured; the child exits 0 if `body` returns.
inline Forked run_forked(const std::function<void()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t child = fork();
  if (child < 0) return {};
  if (child == 0) {
    dup2(fds[1], 2);
    body();
    _exit(0);
  }
  close(fds[1]);
  Forked out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;)
    out.err.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  out.exited = WIFEXITED(status);
  out.status = out.exited ? WEXITSTATUS(status) : -1;
  return out;
}

}  // namespace shardplan::test
