#include "cluster/topology.h"

#include <algorithm>
#include <charconv>

namespace cuckood::cluster {
namespace {

// More nodes than slots cannot all be useful; the bound keeps owner_ indices in int16_t.
constexpr size_t kMaxNodes = kSlotCount;

// Splits on sep, dropping empty pieces (several spaces, the '\n' that ends the last line).
std::vector<std::string_view> SplitNonEmpty(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t next = text.find(sep, pos);
    if (next == std::string_view::npos) {
      next = text.size();
    }
    if (next > pos) {
      out.push_back(text.substr(pos, next - pos));
    }
    pos = next + 1;
  }
  return out;
}

// Decimal digits only (no sign, no spaces), within [lo, hi].
bool ParseBounded(std::string_view s, int lo, int hi, int* out) {
  if (s.empty() || s.size() > 9 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  int v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  if (v < lo || v > hi) {
    return false;
  }
  *out = v;
  return true;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x | 0x20) == (y | 0x20);
         });
}

bool ParseRange(std::string_view text, bool allow_single_range, SlotRange* out) {
  const size_t dash = text.find('-');
  SlotRange r;
  if (dash == std::string_view::npos) {
    if (!ParseBounded(text, 0, kSlotCount - 1, &r.start)) {
      return false;
    }
    r.end = r.start;
  } else if (!ParseBounded(text.substr(0, dash), 0, kSlotCount - 1, &r.start) ||
             !ParseBounded(text.substr(dash + 1), 0, kSlotCount - 1, &r.end) || r.start > r.end ||
             (r.start == r.end && !allow_single_range)) {
    return false;
  }
  *out = r;
  return true;
}

}  // namespace

bool ParseSlotRange(std::string_view text, SlotRange* out) {
  return ParseRange(text, false, out);
}

bool ParseSlotArgument(std::string_view text, SlotRange* out) {
  return ParseRange(text, true, out);
}

std::string FormatSlotRange(const SlotRange& range) {
  if (range.start == range.end) {
    return std::to_string(range.start);
  }
  return std::to_string(range.start) + "-" + std::to_string(range.end);
}

bool ValidNodeId(std::string_view id) {
  return id.size() == kNodeIdLen && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
         });
}

storage::StatusOr<Topology> Topology::Parse(std::string_view text) {
  const auto lines = SplitNonEmpty(text, '\n');
  if (lines.empty() || lines.size() > kMaxNodes) {
    return Invalid(kErrInvalidNodesInfo);
  }
  Topology t;
  for (auto line : lines) {
    const auto fields = SplitNonEmpty(line, ' ');
    if (fields.size() < 5) {
      return Invalid(kErrInvalidNodesInfo);
    }
    Node node;
    if (!ValidNodeId(fields[0])) {
      return Invalid(kErrInvalidNodeId);
    }
    node.id = std::string(fields[0]);
    node.host = std::string(fields[1]);
    if (!ParseBounded(fields[2], 1, 65535, &node.port)) {
      return Invalid(kErrInvalidPort);
    }
    if (EqualsNoCase(fields[3], "master")) {
      node.role = Role::kMaster;
      if (fields[4] != "-") {
        return Invalid(kErrInvalidNodeId);
      }
    } else if (EqualsNoCase(fields[3], "slave") || EqualsNoCase(fields[3], "replica")) {
      node.role = Role::kSlave;
      if (!ValidNodeId(fields[4])) {
        return Invalid(kErrInvalidNodeId);
      }
      if (fields.size() != 5) {
        return Invalid(kErrInvalidNodesInfo);
      }
      node.master_id = std::string(fields[4]);
    } else {
      return Invalid(kErrInvalidRole);
    }
    const auto index = static_cast<int16_t>(t.nodes_.size());
    if (!t.index_.emplace(node.id, t.nodes_.size()).second) {
      return Invalid(kErrDuplicateNodeId);
    }
    for (size_t i = 5; i < fields.size(); ++i) {
      SlotRange r;
      if (!ParseSlotRange(fields[i], &r)) {
        return Invalid(kErrSlotOutOfRange);
      }
      for (int s = r.start; s <= r.end; ++s) {
        auto& owner = t.owner_[static_cast<size_t>(s)];
        if (owner != -1) {
          return Invalid(kErrSlotOverlapped);
        }
        owner = index;
      }
    }
    t.nodes_.push_back(std::move(node));
  }
  t.RebuildRanges();
  return t;
}

const Node* Topology::Find(std::string_view id) const {
  const auto it = index_.find(std::string(id));
  return it == index_.end() ? nullptr : &nodes_[it->second];
}

int Topology::SlotsAssigned() const {
  return static_cast<int>(
      std::count_if(owner_.begin(), owner_.end(), [](int16_t o) { return o >= 0; }));
}

int Topology::Size() const {
  return static_cast<int>(std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) {
    return n.role == Role::kMaster && !n.slots.empty();
  }));
}

std::vector<const Node*> Topology::ReplicasOf(std::string_view master_id) const {
  std::vector<const Node*> out;
  for (const auto& n : nodes_) {
    if (n.role == Role::kSlave && n.master_id == master_id) {
      out.push_back(&n);
    }
  }
  return out;
}

storage::Status Topology::AssignSlots(const std::vector<SlotRange>& ranges,
                                      std::string_view node_id) {
  const auto it = index_.find(std::string(node_id));
  if (it == index_.end()) {
    return Invalid(kErrNoSuchNode);
  }
  if (nodes_[it->second].role != Role::kMaster) {
    return Invalid(kErrNoMasterNode);
  }
  const auto index = static_cast<int16_t>(it->second);
  for (const auto& r : ranges) {
    for (int s = r.start; s <= r.end; ++s) {
      owner_[static_cast<size_t>(s)] = index;
    }
  }
  RebuildRanges();
  return storage::Status::Ok();
}

void Topology::RebuildRanges() {
  for (auto& n : nodes_) {
    n.slots.clear();
  }
  for (int s = 0; s < kSlotCount;) {
    const int16_t owner = owner_[static_cast<size_t>(s)];
    int e = s;
    while (e + 1 < kSlotCount && owner_[static_cast<size_t>(e + 1)] == owner) {
      ++e;
    }
    if (owner >= 0) {
      nodes_[static_cast<size_t>(owner)].slots.push_back({s, e});
    }
    s = e + 1;
  }
}

std::string Topology::Serialize() const {
  std::string out;
  for (const auto& n : nodes_) {
    out += n.id + " " + n.host + " " + std::to_string(n.port);
    if (n.role == Role::kMaster) {
      out += " master -";
      for (const auto& r : n.slots) {
        out += " " + FormatSlotRange(r);
      }
    } else {
      out += " slave " + n.master_id;
    }
    out += "\n";
  }
  return out;
}

}  // namespace cuckood::cluster
