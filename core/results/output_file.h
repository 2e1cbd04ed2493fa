// Writing a result file without clobbering anything else.
//
// `--json PATH` must change PATH's contents and nothing more:
//  - a regular file (or nothing yet) is replaced atomically: the bytes go to
//    an anonymous file in the target's folder (O_TMPFILE), which is given a
//    hidden name ".NAME.tmp.PID" and renamed over the target only when
//    complete, so a reader sees the old file or the new one, never half;
//  - a symbolic link is followed: the file it points to is replaced, the
//    link stays a link;
//  - an open descriptor (/dev/stdout, /dev/stderr, /dev/fd/N,
//    /proc/self/fd/N, /proc/PID/fd/N), whatever it is open on — a regular
//    file included (`--json /dev/stdout >> app.log`) — is written through,
//    never replaced: ours on the descriptor itself (at the stream's offset,
//    or its end in append mode), another process's opened in append mode;
//    a descriptor that is not open, or not open for writing, is an error;
//  - anything else that is not a regular file (a FIFO, a character device
//    such as /dev/null) is written through, never replaced: a device node
//    is never turned into a file;
//  - a directory is an error.
// A writer killed between naming and renaming its temporary file leaves it
// behind; the next check or write of the same target removes every such
// file whose process is gone.
#pragma once

#include <string>

namespace ddp::results {

// Checks, before a run, that `path` can be written as above (its folder
// exists and is writable; a non-regular target is writable). Returns "" or
// why not. Removes stale temporaries of this target.
std::string CheckOutputFile(const std::string& path);

// Writes `content` to `path` as above. Returns "" or the error.
std::string WriteOutputFile(const std::string& path, const std::string& content);

}  // namespace ddp::results
