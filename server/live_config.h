// The running configuration: the Config behind a mutex (CONFIG GET / SET / REWRITE), the
// settings the command path reads without that mutex, and what each option's change does.
//
// Every option row (server/config.h) names its OptionEffect. Set() validates and stores the new
// value, then carries out the changed row's effect; Start() carries out every effect once, so the
// state at start and after any CONFIG SET come from the same code. kHotSettings refreshes every
// hot setting from the config (one function, Publish); the other effects call the hook the
// server registered for them (the engine's sync policy, replication, the logger).
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "server/config.h"
#include "storage/db.h"

namespace cuckood::server {

// The logger's level for a loglevel value (debug, verbose, notice, warning).
spdlog::level::level_enum SpdlogLevel(const std::string& loglevel);

class LiveConfig {
 public:
  explicit LiveConfig(Config config);

  // What an effect other than kHotSettings does; the server registers them before Start().
  void OnChange(OptionEffect effect, std::function<void(const Config&)> hook);
  // Carries out every effect once (the hooks registered so far included).
  void Start();

  Config Get() const;
  // CONFIG SET: an error text (unknown option, immutable, invalid value) or nullopt; the value
  // is stored and the row's effect carried out.
  std::optional<std::string> Set(const std::string& name, const std::string& value);
  // Changes the config without effects (REPLICAOF records its primary here, so that CONFIG
  // REWRITE writes it).
  void Update(const std::function<void(Config&)>& change);

  // ---- hot settings (lock-free) ---------------------------------------------------------------
  storage::CfSettings cf_settings() const;
  uint64_t client_output_buffer_limit() const { return Load(output_limit_); }
  // client-output-buffer-limit of the pubsub class (hard, soft bytes; 0 = none; soft seconds).
  uint64_t pubsub_output_hard_limit() const { return Load(pubsub_hard_); }
  uint64_t pubsub_output_soft_limit() const { return Load(pubsub_soft_); }
  int64_t pubsub_output_soft_seconds() const { return Load(pubsub_soft_seconds_); }
  bool group_commit() const { return group_commit_.load(std::memory_order_relaxed); }
  bool combine_commands() const { return combine_commands_.load(std::memory_order_relaxed); }
  bool key_affinity() const { return key_affinity_.load(std::memory_order_relaxed); }
  bool adaptive_io_threads() const { return adaptive_io_threads_.load(std::memory_order_relaxed); }
  int64_t slowlog_threshold() const { return Load(slowlog_slower_than_); }
  uint64_t slowlog_max_len() const { return Load(slowlog_max_len_); }

 private:
  template <typename T>
  static T Load(const std::atomic<T>& v) {
    return v.load(std::memory_order_relaxed);
  }
  void Carry(OptionEffect effect, const Config& config);  // (with mu_ held)
  void Publish(const Config& c);                          // every hot setting from c

  mutable std::mutex mu_;
  Config config_;
  std::function<void(const Config&)> hooks_[5];  // by OptionEffect

  std::atomic<uint64_t> cf_initial_size_{0}, cf_bucket_size_{0}, cf_max_iterations_{0},
      cf_expansion_factor_{0}, cf_max_expansions_{0}, cf_page_size_{0}, cf_max_filter_bytes_{0};
  std::atomic<int> cf_sizing_{0};
  std::atomic<int64_t> slowlog_slower_than_{0};
  std::atomic<uint64_t> slowlog_max_len_{0};
  std::atomic<uint64_t> output_limit_{0};
  std::atomic<uint64_t> pubsub_hard_{0}, pubsub_soft_{0};
  std::atomic<int64_t> pubsub_soft_seconds_{0};
  std::atomic<bool> group_commit_{true};
  std::atomic<bool> combine_commands_{true};
  std::atomic<bool> key_affinity_{true};
  std::atomic<bool> adaptive_io_threads_{true};
};

}  // namespace cuckood::server
