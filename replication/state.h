// Node-local replication state, kept in a small file in `dir` (never in the replicated
// database): the replication id of the history this node holds, the id it continued from
// (replid2, valid up to replid2_seq) and whom it replicates.
//
// A history is a sequence of RocksDB write batches. Two nodes with the same replid hold prefixes
// of one history; a node promoted from a replica starts a new replid and remembers the old one
// as replid2 up to the sequence it had, so the other replicas of its old primary continue from
// it without a full sync (Redis's replid2 rule).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "storage/status.h"

namespace cuckood::replication {

inline constexpr int kStateFormatVersion = 1;
inline constexpr std::string_view kStateFileName = "replication.state";

struct NodeState {
  std::string replid;        // 40 hex characters
  std::string replid2;       // "" or 40 hex characters
  uint64_t replid2_seq = 0;  // replid2 is valid for sequences up to this one
  std::string master_host;   // empty: a primary
  int master_port = 0;
};

// A new random replication id (40 lower-case hex characters).
std::string NewReplicationId();

// Reads dir/replication.state; a missing file gives a fresh state (new replid, primary).
storage::StatusOr<NodeState> LoadState(const std::string& dir);
// Writes it to a temporary file, syncs and renames it over the old one.
storage::Status SaveState(const std::string& dir, const NodeState& state);

}  // namespace cuckood::replication
