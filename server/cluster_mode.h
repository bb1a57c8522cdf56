// Cluster mode's two entry points into the server: opening the cluster state at start-up, and
// the routing check Dispatch makes for every command (server/commands/cluster.cc holds the
// CLUSTER / CLUSTERX / READONLY / READWRITE / ASKING commands).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "cluster/cluster.h"
#include "server/command.h"
#include "server/config.h"

namespace cuckood::server {

class Server;
struct Client;

// The cluster state of a node started with cluster-enabled yes: the nodes file
// (cluster-config-file in dir) is read, and a replication hook that only logs is installed
// (replication replaces it). Throws std::runtime_error when the nodes file cannot be used.
std::unique_ptr<cluster::ClusterState> OpenClusterState(const Config& cfg);

// Hands the roles the pushed topology gives this node to replication (the controller sends no
// REPLICAOF): "slave <master>" = REPLICAOF master, "master" = REPLICAOF NO ONE. The role already
// known (from the nodes file) is applied at once. Call after replication has started.
void FollowClusterTopology(Server& server);

// The redirection error (without '-') when this command must not run on this node: MOVED,
// CROSSSLOT, CLUSTERDOWN (TRYAGAIN once slots migrate). For EXEC, the keys of every queued
// command count, and a refused transaction is discarded. Also consumes the client's ASKING.
// Call only in cluster mode.
std::optional<std::string> ClusterRedirect(Server& server, Client& client, const CommandSpec& spec,
                                           const Argv& argv);

}  // namespace cuckood::server
