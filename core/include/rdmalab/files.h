// Output files written whole or not at all: through a temporary file next to the destination and
// a rename. The temporary's name is unique to the process and created exclusively (never through
// a symbolic link someone left there), and its bytes reach the disk before it takes the final
// name, so a reader, a crash or a concurrent run never sees half a file under the final name.
#pragma once

#include <string>

#include "rdmalab/status.h"

namespace rdmalab {

// Creates an empty file named `path`.tmp-<pid>-<n> (n counts within the process) and returns its
// name. Fails (io) when the folder cannot be written.
Result<std::string> create_temp_next_to(const std::string& path);

// Creates `tmp` empty and exclusively: fails when anything (a file, a symbolic link) has that name.
Status create_exclusive(const std::string& tmp);

// Flushes `tmp` to the disk and renames it to `path` (replacing what was there), then flushes the
// folder so the rename itself survives a crash.
Status commit_temp(const std::string& tmp, const std::string& path);

// The three steps above for a text known in advance; on failure the temporary is removed.
Status write_file_atomically(const std::string& path, const std::string& text);

// Whether `a` and `b` name the same file (the same inode when both exist, else the same
// normalised absolute path).
bool same_file(const std::string& a, const std::string& b);

}  // namespace rdmalab
