// Reading input files within bounds, and writing output files so that a reader never sees half
// of one.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace shardplan {

/// The largest input file read (a config.json is a few KiB, a probe profile well under a MiB):
/// anything larger is refused rather than read into memory.
inline constexpr long long kMaxInputFileBytes = 64LL * 1024 * 1024;

/// Reads a whole regular file of at most kMaxInputFileBytes. InputError naming `field` when it
/// cannot be opened, is not a regular file (a directory, a device such as /dev/zero, a FIFO:
/// none has an end a reader can wait for) or is larger than the limit.
std::string read_text_file(const std::string& path, const std::string& field);

/// read_text_file, parsed strictly: InputError naming the file with the line and column of
/// malformed JSON, or the first key an object gives twice.
nlohmann::json read_json_file(const std::string& path, const std::string& field);

/// Writes `text` to a temporary file beside `path`, flushes it to disk and renames it over
/// `path`: either the old file or the whole new one exists, never a part. InputError naming
/// `field` when the directory cannot be written; the temporary file is removed then. A path that
/// is a device or a pipe (/dev/null, /dev/stdout, a FIFO) is written into, not replaced.
void write_file_atomically(const std::string& path, const std::string& text,
                           const std::string& field);

}  // namespace shardplan
