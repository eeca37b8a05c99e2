// Writing output files so that a reader never sees half of one.
#pragma once

#include <string>

namespace shardplan {

/// Writes `text` to a temporary file beside `path`, flushes it to disk and renames it over
/// `path`: either the old file or the whole new one exists, never a part. InputError naming
/// `field` when the directory cannot be written; the temporary file is removed then.
void write_file_atomically(const std::string& path, const std::string& text,
                           const std::string& field);

}  // namespace shardplan
