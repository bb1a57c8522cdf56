#include "server/cluster_mode.h"

#include <spdlog/spdlog.h>

#include <sstream>
#include <stdexcept>

#include "server/replication.h"
#include "server/server.h"

namespace cuckood::server {

std::unique_ptr<cluster::ClusterState> OpenClusterState(const Config& cfg) {
  cluster::ClusterOptions options;
  options.nodes_file = cfg.dir + "/" + cfg.cluster_config_file;
  std::istringstream binds(cfg.bind);
  for (std::string b; binds >> b;) {
    options.bind_addresses.push_back(b);
  }
  options.port = cfg.port;
  auto state = std::make_unique<cluster::ClusterState>(std::move(options));
  // Replication (not built yet) takes this over: start or stop replicating as the topology says.
  state->SetReplicationHook([](std::optional<std::pair<std::string, int>> master) {
    if (master) {
      spdlog::info("cluster topology: this node is a replica of {}:{}", master->first,
                   master->second);
    } else {
      spdlog::info("cluster topology: this node is a master");
    }
  });
  if (auto s = state->Load(); !s.ok()) {
    throw std::runtime_error(s.message());
  }
  const auto view = state->Snapshot();
  spdlog::info("cluster mode: node id {}, topology version {}",
               view->myid.empty() ? "(none yet)" : view->myid, view->version);
  return state;
}

void FollowClusterTopology(Server& server) {
  server.cluster()->SetReplicationHook(
      [&server](std::optional<std::pair<std::string, int>> master) {
        if (server.shutting_down()) {
          return;  // replication is stopped first: no new link may start behind it
        }
        storage::Status s;
        if (master) {
          bool already = false;
          s = server.replication().ReplicaOf(master->first, master->second, &already);
          if (s.ok() && !already) {
            spdlog::info("cluster topology: replicating from {}:{}", master->first, master->second);
          }
        } else {
          s = server.replication().PromoteToPrimary();
          if (s.ok()) {
            spdlog::info("cluster topology: this node is a master");
          }
        }
        if (!s.ok()) {
          spdlog::error("cluster topology: changing the replication role failed: {}", s.message());
        }
      });
}

std::optional<std::string> ClusterRedirect(Server& server, Client& client, const CommandSpec& spec,
                                           const Argv& argv) {
  const bool asking = client.cluster_asking;
  if (spec.name != "asking") {
    client.cluster_asking = false;
  }
  const bool exec = spec.name == "exec";
  if (exec && !client.in_multi) {
    return std::nullopt;
  }
  std::vector<std::string_view> keys;
  bool write = (spec.flags & kWrite) != 0;
  if (exec) {
    write = false;
    for (const auto& queued : client.queued) {
      const Argv q(queued.begin(), queued.end());
      const CommandSpec* qs = q.empty() ? nullptr : server.commands().Find(q[0]);
      if (qs == nullptr) {
        continue;
      }
      write |= (qs->flags & kWrite) != 0;
      for (auto key : CommandKeys(*qs, q)) {
        keys.push_back(key);  // (views into client.queued, unchanged until EXEC runs)
      }
    }
  } else {
    keys = CommandKeys(spec, argv);
  }
  if (keys.empty()) {
    return std::nullopt;
  }
  cluster::RouteQuery query;
  query.keys = keys;
  query.write = write;
  query.readonly_client = client.cluster_readonly;
  query.asking = asking;
  auto route = server.cluster()->Route(query);
  if (route.kind == cluster::RouteKind::kHere) {
    return std::nullopt;
  }
  if (exec) {
    // As Redis does: a transaction that cannot run here is discarded with the redirection.
    client.in_multi = false;
    client.multi_dirty = false;
    client.queued.clear();
    server.watches().UnwatchAll(client);
  }
  return std::move(route.error);
}

}  // namespace cuckood::server
