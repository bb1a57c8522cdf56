#include "server/stats.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>

namespace cuckood::server {

size_t StatStripe() {
  static std::atomic<size_t> next{0};
  thread_local const size_t stripe = next.fetch_add(1, std::memory_order_relaxed) % kStatStripes;
  return stripe;
}

// Bucket layout: values below kSubBuckets have a bucket each (exact). Above that, every power of
// two [2^k, 2^(k+1)) with k >= 6 is one group of kSubBuckets equal buckets, so a bucket is at most
// 1/64 (about 1.6%) of its lower bound wide. Group g >= 1 starts at 64 << (g - 1); 40 groups
// reach 2^45 microseconds (about a year); larger values land in the last bucket.
size_t LatencyHistogram::Index(uint64_t v) {
  if (v < kSubBuckets) {
    return static_cast<size_t>(v);
  }
  const int msb = std::bit_width(v) - 1;  // >= 6
  const int shift = msb - 6;
  const size_t index = static_cast<size_t>(shift + 1) * kSubBuckets +
                       static_cast<size_t>((v >> shift) - kSubBuckets);
  return std::min(index, static_cast<size_t>(kBuckets - 1));
}

double LatencyHistogram::UpperBound(size_t index) {
  const size_t group = index / kSubBuckets;
  const size_t sub = index % kSubBuckets;
  if (group == 0) {
    return static_cast<double>(sub);
  }
  // Inclusive upper end of [(64 + sub) << (group - 1), (65 + sub) << (group - 1)).
  return std::ldexp(static_cast<double>(kSubBuckets + sub + 1), static_cast<int>(group - 1)) - 1;
}

LatencyHistogram::~LatencyHistogram() {
  for (auto& stripe : stripes_) {
    delete stripe.load(std::memory_order_relaxed);
  }
}

void LatencyHistogram::Record(uint64_t micros, uint64_t n) {
  if (n == 0) {
    return;
  }
  auto& slot = stripes_[StatStripe()];
  Buckets* buckets = slot.load(std::memory_order_acquire);
  if (buckets == nullptr) {
    auto* made = new Buckets{};
    if (slot.compare_exchange_strong(buckets, made, std::memory_order_acq_rel)) {
      buckets = made;
    } else {
      delete made;  // (another thread of the stripe made them first: buckets holds theirs)
    }
  }
  (*buckets)[Index(micros)].fetch_add(n, std::memory_order_relaxed);
  count_.Add(n);
}

uint64_t LatencyHistogram::Bucket(size_t i) const {
  uint64_t sum = 0;
  for (const auto& stripe : stripes_) {
    if (const Buckets* b = stripe.load(std::memory_order_acquire)) {
      sum += (*b)[i].load(std::memory_order_relaxed);
    }
  }
  return sum;
}

double LatencyHistogram::Percentile(double p) const {
  // The total comes from the buckets themselves so a concurrent Record cannot make the rank
  // unreachable (the counts are read once).
  std::vector<uint64_t> counts(kBuckets);
  uint64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    counts[i] = Bucket(i);
    total += counts[i];
  }
  if (total == 0) {
    return 0;
  }
  p = std::clamp(p, 0.0, 100.0);
  auto rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(total)));
  rank = std::clamp<uint64_t>(rank, 1, total);
  uint64_t seen = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    seen += counts[i];
    if (seen >= rank) {
      return UpperBound(i);
    }
  }
  return UpperBound(counts.size() - 1);
}

void LatencyHistogram::Reset() {
  for (auto& stripe : stripes_) {
    if (Buckets* b = stripe.load(std::memory_order_acquire)) {
      for (auto& c : *b) {
        c.store(0, std::memory_order_relaxed);
      }
    }
  }
  count_.store(0, std::memory_order_relaxed);
}

CommandStats& Stats::For(const std::string& name) {
  std::lock_guard lock(mu_);
  auto& slot = commands_[name];
  if (!slot) {
    slot = std::make_unique<CommandStats>();
  }
  return *slot;
}

std::vector<std::pair<std::string, CommandStats*>> Stats::All() {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, CommandStats*>> out;
  for (auto& [name, cs] : commands_) {
    if (cs->calls.load() != 0 || cs->rejected_calls.load() != 0 || cs->failed_calls.load() != 0) {
      out.emplace_back(name, cs.get());
    }
  }
  return out;
}

void Stats::ResetCommands() {
  // Zero in place: connections and the dispatcher may hold references from For().
  std::lock_guard lock(mu_);
  for (auto& [name, cs] : commands_) {
    cs->calls = 0;
    cs->usec = 0;
    cs->rejected_calls = 0;
    cs->failed_calls = 0;
    cs->latency.Reset();
  }
}

void Stats::CountError(std::string_view message) {
  if (!message.empty() && message.front() == '-') {
    message.remove_prefix(1);
  }
  std::string_view code = message.substr(0, message.find(' '));
  const bool upper = !code.empty() && std::all_of(code.begin(), code.end(),
                                                  [](char c) { return c >= 'A' && c <= 'Z'; });
  if (!upper) {
    code = "ERR";
  }
  total_error_replies.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  ++errors_[std::string(code)];
}

std::map<std::string, uint64_t> Stats::Errors() {
  std::lock_guard lock(mu_);
  return errors_;
}

void Stats::Reset() {
  for (auto* counter :
       {&total_commands_processed, &total_net_input_bytes, &total_net_output_bytes}) {
    counter->store(0, std::memory_order_relaxed);
  }
  for (auto* counter :
       {&total_connections_received, &rejected_connections, &keyspace_hits, &keyspace_misses,
        &expired_keys, &total_error_replies, &unexpected_error_replies,
        &client_output_limit_disconnections, &client_query_buffer_limit_disconnections,
        &protocol_errors, &blocked_on_output, &tls_handshake_errors, &write_groups,
        &write_group_commands, &combined_calls, &combined_runs, &parked_commands, &client_moves}) {
    counter->store(0, std::memory_order_relaxed);
  }
  instantaneous_ops_per_sec = 0;
  instantaneous_input_kbps_x100 = 0;
  instantaneous_output_kbps_x100 = 0;
  ResetCommands();
  std::lock_guard lock(mu_);
  errors_.clear();
  ops_samples_.fill(0);
  in_samples_.fill(0);
  out_samples_.fill(0);
  sample_idx_ = 0;
  sampled_ = false;
}

void Stats::Sample() {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  SampleAt(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
}

void Stats::SampleAt(int64_t now_ms) {
  std::lock_guard lock(mu_);
  const uint64_t ops = total_commands_processed.load(std::memory_order_relaxed);
  const uint64_t in = total_net_input_bytes.load(std::memory_order_relaxed);
  const uint64_t out = total_net_output_bytes.load(std::memory_order_relaxed);
  const int64_t elapsed = now_ms - last_sample_ms_;
  if (sampled_ && elapsed <= 0) {
    return;
  }
  if (sampled_) {
    const auto dt = static_cast<uint64_t>(elapsed);
    // A reset between samples makes a counter go backwards; count that interval as idle.
    auto rate = [dt](uint64_t now_value, uint64_t last) {
      return now_value >= last ? (now_value - last) * 1000 / dt : 0;
    };
    ops_samples_[sample_idx_] = rate(ops, last_ops_);
    // Bytes per second -> kilobytes (1024) per second, times 100 for two decimals.
    in_samples_[sample_idx_] = rate(in, last_in_) * 100 / 1024;
    out_samples_[sample_idx_] = rate(out, last_out_) * 100 / 1024;
    sample_idx_ = (sample_idx_ + 1) % kSamples;
    auto mean = [](const std::array<uint64_t, kSamples>& s) {
      uint64_t sum = 0;
      for (uint64_t v : s) {
        sum += v;
      }
      return static_cast<int64_t>(sum / kSamples);
    };
    instantaneous_ops_per_sec = mean(ops_samples_);
    instantaneous_input_kbps_x100 = mean(in_samples_);
    instantaneous_output_kbps_x100 = mean(out_samples_);
  }
  last_ops_ = ops;
  last_in_ = in;
  last_out_ = out;
  last_sample_ms_ = now_ms;
  sampled_ = true;
}

}  // namespace cuckood::server
