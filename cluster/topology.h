// The cluster topology a controller pushes (CLUSTERX SETNODES): nodes with their id, address,
// role, master and slot ranges, and the owner of each of the 16384 hash slots.
//
// The text format is Kvrocks' (and kvrocks-controller's), one node a line:
//   <id> <host> <port> master - <slot|a-b> [<slot|a-b> ...]
//   <id> <host> <port> slave <master-id>
// Lines are separated by '\n' (the controller ends the last one with '\n' too; empty lines are
// skipped). Parsing follows Kvrocks' rules and error texts, and also refuses what Kvrocks lets
// through silently: ids that are not 40 characters of [A-Za-z0-9], port 0, and a node id given
// twice.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/format.h"
#include "storage/status.h"

namespace cuckood::cluster {

// A refusal of the cluster's commands: kInvalid with the "ERR " of Redis's error replies.
inline storage::Status Invalid(std::string_view text) {
  return {storage::Code::kInvalid, "ERR " + std::string(text)};
}

inline constexpr int kSlotCount = 16384;
inline constexpr size_t kNodeIdLen = 40;
// Redis's cluster bus port offset, shown in CLUSTER NODES as ip:port@cport.
inline constexpr int kClusterPortIncr = 10000;

// Kvrocks' texts (the reply is "ERR " + text unless noted).
inline constexpr std::string_view kErrInvalidNodeId = "Invalid cluster node id";
inline constexpr std::string_view kErrInvalidSlotId = "Invalid slot id";
inline constexpr std::string_view kErrSlotOutOfRange = "Slot is out of range";
inline constexpr std::string_view kErrSlotRangeInvalid = "Slot range is invalid";
inline constexpr std::string_view kErrInvalidVersion = "Invalid cluster version";
inline constexpr std::string_view kErrSlotOverlapped = "Slot distribution is overlapped";
inline constexpr std::string_view kErrNoMasterNode = "The node isn't a master";
inline constexpr std::string_view kErrNotInitialized = "The cluster is not initialized";
inline constexpr std::string_view kErrInvalidNodesInfo = "Invalid cluster nodes info";
inline constexpr std::string_view kErrInvalidPort = "Invalid cluster node port";
inline constexpr std::string_view kErrInvalidRole = "Invalid cluster node role";
inline constexpr std::string_view kErrNoSuchNode = "No this node in the cluster";
// Ours: Kvrocks keeps the last line of a repeated id without a word.
inline constexpr std::string_view kErrDuplicateNodeId = "Duplicate cluster node id";

// The hash slot of a key: Redis Cluster's CRC16/XMODEM over the hash tag, mod 16384. The same
// function storage uses for the slot prefix of every metadata key.
inline uint16_t KeySlot(std::string_view key) {
  return storage::KeySlot(key);
}

enum class Role { kMaster, kSlave };

struct SlotRange {
  int start = 0;
  int end = 0;  // inclusive
  bool operator==(const SlotRange&) const = default;
};

// "5" or "0-99" (start < end, both in [0, 16383]), as the controller writes them. Kvrocks'
// rule: a range whose ends are equal or reversed is "Slot is out of range".
bool ParseSlotRange(std::string_view text, SlotRange* out);
// "5" or "0-99" (start <= end here: CLUSTERX SETSLOT and MIGRATE accept "5-5").
bool ParseSlotArgument(std::string_view text, SlotRange* out);
std::string FormatSlotRange(const SlotRange& range);

// 40 characters of [A-Za-z0-9].
bool ValidNodeId(std::string_view id);

struct Node {
  std::string id;
  std::string host;
  int port = 0;
  Role role = Role::kMaster;
  std::string master_id;         // slaves only
  std::vector<SlotRange> slots;  // masters only; merged, ascending
};

class Topology {
 public:
  Topology() { owner_.fill(-1); }

  // Parses SETNODES text. Errors are kInvalid with the reply text ("ERR ...").
  static storage::StatusOr<Topology> Parse(std::string_view text);

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node* Find(std::string_view id) const;
  // The master serving a slot, or null.
  const Node* OwnerOf(int slot) const {
    const int i = owner_[static_cast<size_t>(slot)];
    return i < 0 ? nullptr : &nodes_[static_cast<size_t>(i)];
  }
  int SlotsAssigned() const;
  // Masters that serve at least one slot (CLUSTER INFO cluster_size).
  int Size() const;
  // Replicas of a master, in topology order.
  std::vector<const Node*> ReplicasOf(std::string_view master_id) const;

  // Moves the slots to the master named node_id (CLUSTERX SETSLOT). kInvalid: no such node, or
  // not a master.
  storage::Status AssignSlots(const std::vector<SlotRange>& ranges, std::string_view node_id);

  // The SETNODES text of this topology (every line ends in '\n'); Parse(Serialize()) == *this.
  std::string Serialize() const;

 private:
  void RebuildRanges();

  std::vector<Node> nodes_;
  std::unordered_map<std::string, size_t> index_;  // node id -> position in nodes_
  std::array<int16_t, kSlotCount> owner_;
};

}  // namespace cuckood::cluster
