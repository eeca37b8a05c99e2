// Atomic replacement of output files: mkstemp beside the target, write, fsync, rename(2),
// fsync of the folder.
#include "shardplan/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "shardplan/error.hpp"

namespace shardplan {

void write_file_atomically(const std::string& path, const std::string& text,
                           const std::string& field) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty()) throw InputError(field, "'" + path + "' names a directory, not a file");
  std::string pattern =
      (slash == std::string::npos ? std::string() : dir) + "." + name + ".tmp-XXXXXX";
  std::vector<char> temp(pattern.begin(), pattern.end());
  temp.push_back('\0');
  const int fd = mkstemp(temp.data());
  if (fd < 0) throw InputError(field, "cannot write in " + dir + ": " + std::strerror(errno));
  auto fail = [&](const char* what) {
    const int saved = errno;
    close(fd);
    std::remove(temp.data());
    throw InputError(field,
                     std::string("cannot ") + what + " " + path + ": " + std::strerror(saved));
  };
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    written += static_cast<size_t>(n);
  }
  // mkstemp creates 0600; an output file is as readable as any other the user writes.
  const mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd, 0666 & ~mask) != 0 || fsync(fd) != 0) fail("write");
  if (close(fd) != 0) {
    std::remove(temp.data());
    throw InputError(field, "cannot write " + path + ": " + std::strerror(errno));
  }
  if (std::rename(temp.data(), path.c_str()) != 0) {
    const int saved = errno;
    std::remove(temp.data());
    throw InputError(field, "cannot replace " + path + ": " + std::strerror(saved));
  }
  // The rename itself survives a crash only once the folder is synced.
  const int folder = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (folder >= 0) {
    fsync(folder);
    close(folder);
  }
}

}  // namespace shardplan
