// The running configuration (server/live_config.h): a CONFIG SET reaches the settings the command
// path reads, start and SET carry out the same effects, and refused changes change nothing.
#include "server/live_config.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using cuckood::server::Config;
using cuckood::server::LiveConfig;
using cuckood::server::OptionEffect;

TEST_CASE("a CONFIG SET of a hot setting is visible through its accessor", "[live_config]") {
  LiveConfig live{Config{}};
  REQUIRE_FALSE(live.Set("cf-bucket-size", "4"));
  REQUIRE_FALSE(live.Set("cf-initial-size", "5000"));
  REQUIRE_FALSE(live.Set("cf-max-iterations", "7"));
  REQUIRE_FALSE(live.Set("cf-expansion-factor", "4"));
  REQUIRE_FALSE(live.Set("cf-max-expansions", "9"));
  REQUIRE_FALSE(live.Set("cf-max-filter-bytes", "1048576"));
  REQUIRE_FALSE(live.Set("cf-sizing", "load-factor"));
  const auto cf = live.cf_settings();
  CHECK(cf.bucket_size == 4);
  CHECK(cf.initial_capacity == 5000);
  CHECK(cf.max_iterations == 7);
  CHECK(cf.expansion == 4);
  CHECK(cf.max_expansions == 9);
  CHECK(cf.max_filter_bytes == 1048576);
  CHECK(cf.sizing == cuckood::core::SizingPolicy::kLoadFactor);
  REQUIRE_FALSE(live.Set("slowlog-log-slower-than", "-1"));
  REQUIRE_FALSE(live.Set("slowlog-max-len", "7"));
  REQUIRE_FALSE(live.Set("group-commit", "no"));
  REQUIRE_FALSE(live.Set("client-output-buffer-limit", "normal 1000 0 0 pubsub 2000 500 9"));
  CHECK(live.slowlog_threshold() == -1);
  CHECK(live.slowlog_max_len() == 7);
  CHECK_FALSE(live.group_commit());
  CHECK(live.client_output_buffer_limit() == 1000);
  CHECK(live.pubsub_output_hard_limit() == 2000);
  CHECK(live.pubsub_output_soft_limit() == 500);
  CHECK(live.pubsub_output_soft_seconds() == 9);
  CHECK(live.Get().cf_bucket_size == 4);  // and the config itself
}

TEST_CASE("settings only read at start are published from the config too", "[live_config]") {
  Config c;
  c.cf_page_size = 4096;
  c.cf_bucket_size = 3;
  LiveConfig live{c};
  CHECK(live.cf_settings().page_size == 4096);
  CHECK(live.cf_settings().bucket_size == 3);
  CHECK(live.Set("cf-page-size", "8192") == "can't set immutable config");
  CHECK(live.cf_settings().page_size == 4096);
}

TEST_CASE("start and CONFIG SET run the same effect hooks", "[live_config]") {
  Config c;
  c.appendfsync = "no";
  LiveConfig live{c};
  std::vector<std::string> fsync;
  std::vector<std::string> levels;
  int replication = 0;
  live.OnChange(OptionEffect::kFsync, [&](const Config& v) { fsync.push_back(v.appendfsync); });
  live.OnChange(OptionEffect::kLogLevel, [&](const Config& v) { levels.push_back(v.loglevel); });
  live.OnChange(OptionEffect::kReplication, [&](const Config&) { ++replication; });
  live.Start();
  CHECK(fsync == std::vector<std::string>{"no"});
  CHECK(levels == std::vector<std::string>{"notice"});
  CHECK(replication == 1);
  REQUIRE_FALSE(live.Set("appendfsync", "always"));
  REQUIRE_FALSE(live.Set("repl-timeout", "30"));
  REQUIRE_FALSE(live.Set("maxclients", "50"));  // no effect: read where it is used
  CHECK(fsync == std::vector<std::string>{"no", "always"});
  CHECK(levels.size() == 1);
  CHECK(replication == 2);
  REQUIRE_FALSE(live.Set("loglevel", "warning"));
  CHECK(levels == std::vector<std::string>{"notice", "warning"});
}

TEST_CASE("a refused CONFIG SET changes nothing and runs no effect", "[live_config]") {
  LiveConfig live{Config{}};
  int calls = 0;
  live.OnChange(OptionEffect::kFsync, [&](const Config&) { ++calls; });
  CHECK(live.Set("no-such-option", "1") == "unknown option");
  CHECK(live.Set("port", "7000") == "can't set immutable config");
  CHECK(live.Set("appendfsync", "sometimes").has_value());
  CHECK(live.Set("cf-bucket-size", "0").has_value());
  CHECK(calls == 0);
  CHECK(live.Get().appendfsync == Config{}.appendfsync);
  CHECK(live.cf_settings().bucket_size == Config{}.cf_bucket_size);
}

TEST_CASE("every option that changes a running part names its effect", "[live_config]") {
  for (const auto& row : cuckood::server::OptionTable()) {
    if (row.name.rfind("cf-", 0) == 0 || row.name.rfind("slowlog-", 0) == 0) {
      CHECK(row.effect == OptionEffect::kHotSettings);
    }
  }
  CHECK(cuckood::server::FindOption("appendfsync")->effect == OptionEffect::kFsync);
  CHECK(cuckood::server::FindOption("loglevel")->effect == OptionEffect::kLogLevel);
  CHECK(cuckood::server::FindOption("maxclients")->effect == OptionEffect::kNone);
}
