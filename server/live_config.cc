#include "server/live_config.h"

namespace cuckood::server {

spdlog::level::level_enum SpdlogLevel(const std::string& l) {
  return l == "debug" || l == "verbose" ? spdlog::level::debug
         : l == "warning"               ? spdlog::level::warn
                                        : spdlog::level::info;
}

LiveConfig::LiveConfig(Config config) : config_(std::move(config)) {
  Publish(config_);  // (readable before Start: the hot settings need no hook)
}

void LiveConfig::OnChange(OptionEffect effect, std::function<void(const Config&)> hook) {
  std::lock_guard lock(mu_);
  hooks_[static_cast<size_t>(effect)] = std::move(hook);
}

void LiveConfig::Start() {
  std::lock_guard lock(mu_);
  for (auto effect : {OptionEffect::kHotSettings, OptionEffect::kFsync, OptionEffect::kReplication,
                      OptionEffect::kLogLevel}) {
    Carry(effect, config_);
  }
}

Config LiveConfig::Get() const {
  std::lock_guard lock(mu_);
  return config_;
}

std::optional<std::string> LiveConfig::Set(const std::string& name, const std::string& value) {
  const OptionRow* row = FindOption(name);
  if (row == nullptr) {
    return "unknown option";
  }
  if (!row->mutable_at_runtime) {
    return "can't set immutable config";
  }
  std::lock_guard lock(mu_);
  Config next = config_;
  if (auto err = row->set(next, value)) {
    return err;
  }
  config_ = std::move(next);
  Carry(row->effect, config_);
  return std::nullopt;
}

void LiveConfig::Update(const std::function<void(Config&)>& change) {
  std::lock_guard lock(mu_);
  change(config_);
}

void LiveConfig::Carry(OptionEffect effect, const Config& config) {
  if (effect == OptionEffect::kNone) {
    return;
  }
  if (effect == OptionEffect::kHotSettings) {
    Publish(config);
    return;
  }
  if (const auto& hook = hooks_[static_cast<size_t>(effect)]) {
    hook(config);
  }
}

void LiveConfig::Publish(const Config& c) {
  cf_initial_size_ = c.cf_initial_size;
  cf_bucket_size_ = c.cf_bucket_size;
  cf_max_iterations_ = c.cf_max_iterations;
  cf_expansion_factor_ = c.cf_expansion_factor;
  cf_max_expansions_ = c.cf_max_expansions;
  cf_page_size_ = c.cf_page_size;
  cf_max_filter_bytes_ = c.cf_max_filter_bytes;
  cf_sizing_ = c.cf_sizing == "load-factor" ? 1 : 0;
  slowlog_slower_than_ = c.slowlog_log_slower_than;
  slowlog_max_len_ = c.slowlog_max_len;
  output_limit_ = c.client_output_buffer_limit;
  pubsub_hard_ = c.pubsub_output_hard_limit;
  pubsub_soft_ = c.pubsub_output_soft_limit;
  pubsub_soft_seconds_ = c.pubsub_output_soft_seconds;
  group_commit_ = c.group_commit;
  combine_commands_ = c.combine_commands;
  key_affinity_ = c.key_affinity;
  adaptive_io_threads_ = c.adaptive_io_threads;
}

storage::CfSettings LiveConfig::cf_settings() const {
  storage::CfSettings s;
  s.initial_capacity = Load(cf_initial_size_);
  s.bucket_size = static_cast<uint16_t>(Load(cf_bucket_size_));
  s.max_iterations = static_cast<uint16_t>(Load(cf_max_iterations_));
  s.expansion = static_cast<uint16_t>(Load(cf_expansion_factor_));
  s.max_expansions = static_cast<uint32_t>(Load(cf_max_expansions_));
  s.sizing =
      Load(cf_sizing_) == 1 ? core::SizingPolicy::kLoadFactor : core::SizingPolicy::kRedisBloom;
  s.page_size = static_cast<uint32_t>(Load(cf_page_size_));
  s.max_filter_bytes = Load(cf_max_filter_bytes_);
  return s;
}

}  // namespace cuckood::server
