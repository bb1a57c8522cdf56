#include "cluster/routing.h"

namespace cuckood::cluster {

RouteResult Route(const Topology* topology, const Node* myself, const RouteQuery& query) {
  RouteResult result;
  if (query.keys.empty()) {
    return result;
  }
  const int slot = KeySlot(query.keys[0]);
  for (size_t i = 1; i < query.keys.size(); ++i) {
    if (KeySlot(query.keys[i]) != slot) {
      result.kind = RouteKind::kCrossSlot;
      result.error = std::string(kErrCrossSlot);
      return result;
    }
  }
  result.slot = slot;
  const Node* owner = topology == nullptr ? nullptr : topology->OwnerOf(slot);
  if (owner == nullptr) {
    result.kind = RouteKind::kClusterDown;
    result.error = std::string(kErrSlotNotServed);
    return result;
  }
  if (owner == myself) {
    // Slot migration goes here: a write to a slot in its write-forbidden window answers
    // kTryAgain ("TRYAGAIN ..."), and a slot already handed over answers kMoved to its new
    // master until the controller pushes the new topology.
    return result;
  }
  // Migration also goes here: an ASKING client may use a slot this node is importing.
  (void)query.asking;
  if (myself != nullptr && myself->role == Role::kSlave && myself->master_id == owner->id &&
      query.readonly_client && !query.write) {
    return result;  // a replica serves reads of its master's slots to READONLY clients
  }
  result.kind = RouteKind::kMoved;
  result.error =
      "MOVED " + std::to_string(slot) + " " + owner->host + ":" + std::to_string(owner->port);
  return result;
}

}  // namespace cuckood::cluster
