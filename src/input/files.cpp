// Bounded reads of input files (regular files only, up to a size limit) and atomic replacement
// of output files: mkstemp beside the target, write, fsync, rename(2), fsync of the folder (a
// device or pipe given as the output is written into, not replaced).
#include "shardplan/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "json_reader.hpp"
#include "shardplan/error.hpp"

namespace shardplan {

std::string read_text_file(const std::string& path, const std::string& field) {
  // O_NONBLOCK: opening a FIFO nobody writes to would otherwise wait forever before fstat.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(field, "cannot read '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    const bool dir = S_ISDIR(st.st_mode);
    throw InputError(
        field, "'" + path + "' is " +
                   (dir ? "a directory" : "not a regular file (a device, FIFO or socket)") +
                   "; give a file" +
                   (field == "--from" ? " (a launcher config: .sh, .json, .toml or .yaml)" : ""));
  }
  const auto too_large = [&] {
    close(fd);
    return InputError(field, "'" + path + "' is larger than " +
                                 std::to_string(kMaxInputFileBytes / (1024LL * 1024)) +
                                 " MiB; no input shardplan reads is that large");
  };
  if (st.st_size > kMaxInputFileBytes) throw too_large();
  std::string text;
  text.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      close(fd);
      throw InputError(field, "cannot read '" + path + "': " + std::strerror(saved));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    // A file that grows while it is read (a log being written) stops at the limit too.
    if (static_cast<long long>(text.size()) > kMaxInputFileBytes) throw too_large();
  }
  close(fd);
  return text;
}

nlohmann::json read_json_file(const std::string& path, const std::string& field) {
  return parse_json(read_text_file(path, field), path);
}

namespace {

// Writes `text` to an fd opened on `path`, retrying interrupted writes.
bool write_all(int fd, const std::string& text) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    written += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text,
                           const std::string& field) {
  // A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written into, never replaced: a
  // rename over /dev/null run as root would leave a regular file where the device was.
  struct stat target {};
  if (stat(path.c_str(), &target) == 0 && !S_ISREG(target.st_mode) && !S_ISDIR(target.st_mode)) {
    const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw InputError(field, "cannot write " + path + ": " + std::strerror(errno));
    const bool ok = write_all(fd, text);
    const int saved = errno;
    close(fd);
    if (!ok) throw InputError(field, "cannot write " + path + ": " + std::strerror(saved));
    return;
  }
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
  if (!write_all(fd, text)) fail("write");
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
