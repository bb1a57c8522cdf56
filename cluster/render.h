// What CLUSTER INFO / NODES / SLOTS / SHARDS / REPLICAS show, computed from one snapshot of the
// cluster state. Text replies (INFO, NODES) are rendered here; the structured ones are returned
// as data for server/ to encode in the client's protocol.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster/topology.h"

namespace cuckood::cluster {

// One consistent picture of the node's cluster state.
struct View {
  int64_t version = -1;  // the topology version; -1 before the first SETNODES
  std::string myid;      // empty before SETNODEID (or a SETNODES that names this node)
  std::shared_ptr<const Topology> topology;  // null before the first SETNODES

  // This node's entry in the topology, or null.
  const Node* myself() const { return topology ? topology->Find(myid) : nullptr; }
};

// CLUSTER INFO's text (CRLF lines). Needs view.topology.
std::string RenderInfo(const View& view);

// One CLUSTER NODES line without its '\n': id host:port@cport flags master ping pong epoch
// connected slots... (Redis's format; the topology version is the config epoch; no migration
// markers).
std::string RenderNodeLine(const View& view, const Node& node, uint64_t now_ms);
// CLUSTER NODES: every node's line, each ending in '\n'. Needs view.topology.
std::string RenderNodes(const View& view, uint64_t now_ms);

// A CLUSTER SLOTS entry: a slot range and the nodes serving it, master first.
struct SlotEntry {
  SlotRange range;
  std::vector<const Node*> nodes;
};
// Ascending by first slot. Pointers live as long as view.topology.
std::vector<SlotEntry> SlotTable(const View& view);

// A CLUSTER SHARDS entry: one master (with or without slots) and its replicas.
struct Shard {
  const Node* master = nullptr;
  std::vector<const Node*> replicas;
};
std::vector<Shard> Shards(const View& view);

}  // namespace cuckood::cluster
