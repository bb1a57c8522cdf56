#include "cluster/render.h"

#include <algorithm>

namespace cuckood::cluster {

std::string RenderInfo(const View& view) {
  const Topology& t = *view.topology;
  const std::string assigned = std::to_string(t.SlotsAssigned());
  const std::string version = std::to_string(view.version);
  std::string out;
  auto line = [&out](std::string_view field, std::string_view value) {
    out.append(field).append(":").append(value).append("\r\n");
  };
  // Kvrocks' choice: the state is ok whenever a topology is set (the controller owns health).
  line("cluster_state", "ok");
  line("cluster_slots_assigned", assigned);
  line("cluster_slots_ok", assigned);
  line("cluster_slots_pfail", "0");
  line("cluster_slots_fail", "0");
  line("cluster_known_nodes", std::to_string(t.nodes().size()));
  line("cluster_size", std::to_string(t.Size()));
  line("cluster_current_epoch", version);
  line("cluster_my_epoch", version);
  // Slot migration adds its lines here: "migrating_slot(s): a-b", "destination_node: <id>",
  // "migrating_state: start|success|fail".
  return out;
}

std::string RenderNodeLine(const View& view, const Node& node, uint64_t now_ms) {
  const bool me = node.id == view.myid;
  std::string out = node.id + " " + node.host + ":" + std::to_string(node.port) + "@" +
                    std::to_string(node.port + kClusterPortIncr) + " ";
  out += me ? "myself," : "";
  if (node.role == Role::kMaster) {
    out += "master -";
  } else {
    out += "slave " + node.master_id;
  }
  // ping-sent 0 (no ping pending); pong-received: 0 for myself, as Redis shows it.
  out +=
      " 0 " + std::to_string(me ? 0 : now_ms) + " " + std::to_string(view.version) + " connected";
  for (const auto& r : node.slots) {
    out += " " + FormatSlotRange(r);
  }
  return out;
}

std::string RenderNodes(const View& view, uint64_t now_ms) {
  std::string out;
  for (const auto& n : view.topology->nodes()) {
    out += RenderNodeLine(view, n, now_ms);
    out += "\n";
  }
  return out;
}

std::vector<SlotEntry> SlotTable(const View& view) {
  std::vector<SlotEntry> out;
  if (!view.topology) {
    return out;
  }
  for (const auto& n : view.topology->nodes()) {
    if (n.role != Role::kMaster) {
      continue;
    }
    const auto replicas = view.topology->ReplicasOf(n.id);
    for (const auto& r : n.slots) {
      SlotEntry e{r, {&n}};
      e.nodes.insert(e.nodes.end(), replicas.begin(), replicas.end());
      out.push_back(std::move(e));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const SlotEntry& a, const SlotEntry& b) { return a.range.start < b.range.start; });
  return out;
}

std::vector<Shard> Shards(const View& view) {
  std::vector<Shard> out;
  if (!view.topology) {
    return out;
  }
  for (const auto& n : view.topology->nodes()) {
    if (n.role == Role::kMaster) {
      out.push_back({&n, view.topology->ReplicasOf(n.id)});
    }
  }
  return out;
}

}  // namespace cuckood::cluster
