// Full sync: a RocksDB checkpoint of the primary streamed file by file to a replica, which
// stages it beside its database and then installs it in place of its own files.
//
// Installing is crash-safe: the staged folder is complete once its READY marker is written; the
// old database files are then removed (marker CLEARED) and the staged files renamed into `dir`.
// A server that starts with a staged folder finishes (READY) or discards (no READY) it before it
// opens the database (RecoverStaged).
#pragma once

#include <cstdint>
#include <string>

#include "replication/link.h"
#include "storage/engine.h"

namespace cuckood::replication {

inline constexpr std::string_view kStagedDirName = ".fullsync";

// Primary side: makes a checkpoint under dir, sends "+FULLSYNC <replid> <seq>", every file and
// "+ENDFILES <seq>", then removes the checkpoint. rate_bytes: bytes a second at most (0 = no
// limit). *seq: the checkpoint's sequence number.
Status SendCheckpoint(Link& link, storage::Engine& engine, const std::string& dir,
                      const std::string& replid, uint64_t rate_bytes, uint64_t* seq);

// Replica side, after "+FULLSYNC": receives the files into dir/.fullsync (replacing whatever
// was staged before), checks each file's size and checksum, and marks the folder READY.
// *seq: the sequence number the checkpoint holds. *bytes: counted as they arrive.
Status ReceiveCheckpoint(Link& link, const std::string& dir, uint64_t* seq,
                         std::atomic<uint64_t>* bytes);

// Replaces the database files in dir with the staged ones (the database must be closed).
Status InstallStaged(const std::string& dir);
// At start-up, before the database opens: finishes an install that was under way, or drops a
// staged folder that was not complete.
Status RecoverStaged(const std::string& dir);

}  // namespace cuckood::replication
