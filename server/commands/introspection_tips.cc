// The command tips of COMMAND INFO: the ones Redis 7.0 gives the commands cuckood shares with it.
// Cluster-aware clients route by them (request_policy / response_policy).
#include <map>
#include <string_view>
#include <vector>

#include "server/commands/family.h"

namespace cuckood::server {

const std::vector<std::string_view>& CommandTips(std::string_view name) {
  static const std::map<std::string_view, std::vector<std::string_view>> kTips = {
      {"ping", {"request_policy:all_shards", "response_policy:all_succeeded"}},
      {"client|list", {"nondeterministic_output"}},
      {"client|info", {"nondeterministic_output"}},
      {"del", {"request_policy:multi_shard", "response_policy:agg_sum"}},
      {"unlink", {"request_policy:multi_shard", "response_policy:agg_sum"}},
      {"exists", {"request_policy:multi_shard", "response_policy:agg_sum"}},
      {"dump", {"nondeterministic_output"}},
      {"migrate", {"nondeterministic_output"}},
      {"ttl", {"nondeterministic_output"}},
      {"pttl", {"nondeterministic_output"}},
      {"scan", {"nondeterministic_output", "request_policy:special"}},
      {"keys", {"request_policy:all_shards", "nondeterministic_output_order"}},
      {"randomkey", {"request_policy:all_shards", "nondeterministic_output"}},
      {"dbsize", {"request_policy:all_shards", "response_policy:agg_sum"}},
      {"flushdb", {"request_policy:all_shards", "response_policy:all_succeeded"}},
      {"flushall", {"request_policy:all_shards", "response_policy:all_succeeded"}},
      {"memory|stats",
       {"nondeterministic_output", "request_policy:all_shards", "response_policy:special"}},
      {"memory|doctor",
       {"nondeterministic_output", "request_policy:all_shards", "response_policy:special"}},
      {"memory|malloc-stats",
       {"nondeterministic_output", "request_policy:all_shards", "response_policy:special"}},
      {"memory|purge", {"request_policy:all_shards", "response_policy:all_succeeded"}},
      {"info", {"nondeterministic_output", "request_policy:all_shards", "response_policy:special"}},
      {"config|set", {"request_policy:all_nodes", "response_policy:all_succeeded"}},
      {"time", {"nondeterministic_output"}},
      {"lastsave", {"nondeterministic_output"}},
      {"slowlog|get", {"request_policy:all_nodes", "nondeterministic_output"}},
      {"slowlog|len",
       {"request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"}},
      {"slowlog|reset", {"request_policy:all_nodes", "response_policy:all_succeeded"}},
      {"latency|latest",
       {"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"}},
      {"latency|history",
       {"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"}},
      {"latency|reset", {"request_policy:all_nodes", "response_policy:all_succeeded"}},
      {"latency|graph",
       {"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"}},
      {"latency|doctor",
       {"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"}},
      {"wait", {"request_policy:all_shards", "response_policy:agg_min"}},
      {"command", {"nondeterministic_output_order"}},
      {"command|info", {"nondeterministic_output_order"}},
      {"command|docs", {"nondeterministic_output_order"}},
      {"command|list", {"nondeterministic_output_order"}},
  };
  static const std::vector<std::string_view> kNone;
  const auto it = kTips.find(name);
  return it == kTips.end() ? kNone : it->second;
}

}  // namespace cuckood::server
