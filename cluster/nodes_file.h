// The nodes file (cluster-config-file in dir): this node's id, the topology version and the
// topology, so a restarted node comes back with what the controller last pushed. Node-local
// state: it never goes into the replicated database.
//
// Format (text, one record a line; lines starting with '#' are comments):
//   format 1
//   id <node id>                 (absent before CLUSTERX SETNODEID)
//   version <topology version>   (-1: no topology)
//   node <SETNODES line>         (one per node, in topology order)
// Written to "<path>.tmp", fsynced, renamed over the file, and the directory fsynced, so a crash
// leaves either the old file or the new one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "storage/status.h"

namespace cuckood::cluster {

inline constexpr int kNodesFileFormat = 1;

struct NodesFileContent {
  std::string myid;
  int64_t version = -1;
  std::string topology;  // SETNODES text; empty when version is -1
};

storage::Status WriteNodesFile(const std::string& path, const NodesFileContent& content);

// nullopt when the file does not exist. kCorruption (naming the file and line) when it cannot
// be read as this format.
storage::StatusOr<std::optional<NodesFileContent>> ReadNodesFile(const std::string& path);

}  // namespace cuckood::cluster
