// The one routing decision of cluster mode: given a command's keys, whether it writes, the
// client's READONLY/ASKING state and this node's place in the topology, run the command here or
// answer a redirection, with Redis 7's texts.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "cluster/topology.h"

namespace cuckood::cluster {

inline constexpr std::string_view kErrCrossSlot =
    "CROSSSLOT Keys in request don't hash to the same slot";
inline constexpr std::string_view kErrSlotNotServed = "CLUSTERDOWN Hash slot not served";

struct RouteQuery {
  std::span<const std::string_view> keys;
  bool write = false;
  bool readonly_client = false;  // the client sent READONLY (reads may go to a replica)
  bool asking = false;           // the client sent ASKING just before this command
};

enum class RouteKind {
  kHere,         // run the command on this node
  kMoved,        // MOVED <slot> <host>:<port>
  kCrossSlot,    // the keys are in more than one slot
  kClusterDown,  // no master serves the slot (or no topology yet)
  kTryAgain,     // the slot is being moved and cannot take this command now (migration)
};

struct RouteResult {
  RouteKind kind = RouteKind::kHere;
  int slot = -1;      // the keys' slot; -1 when the command has no keys
  std::string error;  // the error reply without '-' (empty for kHere)
};

// topology may be null (no SETNODES yet); myself is this node's entry in it, or null.
// Commands without keys always run here.
RouteResult Route(const Topology* topology, const Node* myself, const RouteQuery& query);

}  // namespace cuckood::cluster
