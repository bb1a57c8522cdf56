// Server statistics: counters for INFO stats, per-command stats for INFO commandstats and
// latency percentiles for INFO latencystats. Updated lock-free on the command path.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace cuckood::server {

// The stripe of the calling thread for the counters below: threads take stripes in turn as they
// first count something, so the io threads (the ones counting every command) each have their own.
size_t StatStripe();
inline constexpr size_t kStatStripes = 8;

// A counter updated by many threads and read rarely (INFO): one cache line per stripe, so that
// two io threads counting every command do not move one line between their cores on each count.
// Reads add the stripes. Threads beyond kStatStripes share stripes (still exact: atomic adds).
class StripedCounter {
 public:
  void Add(uint64_t n) { cells_[StatStripe()].value.fetch_add(n, std::memory_order_relaxed); }
  StripedCounter& operator+=(uint64_t n) {
    Add(n);
    return *this;
  }
  void operator++(int) { Add(1); }
  void operator++() { Add(1); }
  uint64_t load(std::memory_order order = std::memory_order_seq_cst) const {
    uint64_t sum = 0;
    for (const auto& c : cells_) {
      sum += c.value.load(order);
    }
    return sum;
  }
  // Sets the total (the first stripe holds it, the others are zeroed): for resets and tests.
  void store(uint64_t v, std::memory_order order = std::memory_order_seq_cst) {
    for (auto& c : cells_) {
      c.value.store(0, order);
    }
    cells_[0].value.store(v, order);
  }
  StripedCounter& operator=(uint64_t v) {
    store(v);
    return *this;
  }
  operator uint64_t() const { return load(); }  // NOLINT(google-explicit-constructor)

 private:
  struct alignas(64) Cell {
    std::atomic<uint64_t> value{0};
  };
  std::array<Cell, kStatStripes> cells_{};
};

// Latency histogram with log-linear buckets (about 1.5% resolution) for percentiles. Each stripe
// (StatStripe) records into buckets of its own, made on its first record; reads add them.
class LatencyHistogram {
 public:
  LatencyHistogram() = default;
  ~LatencyHistogram();
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;
  void Record(uint64_t micros) { Record(micros, 1); }
  // n records of the same value.
  void Record(uint64_t micros, uint64_t n);
  // Percentile p in [0, 100] in microseconds (upper bound of its bucket), 0 when empty.
  double Percentile(double p) const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  void Reset();

 private:
  static constexpr int kSubBuckets = 64;
  static constexpr int kBuckets = 40 * kSubBuckets;
  using Buckets = std::array<std::atomic<uint64_t>, kBuckets>;
  static size_t Index(uint64_t v);
  static double UpperBound(size_t index);
  // The sum over the stripes of bucket i.
  uint64_t Bucket(size_t i) const;
  std::array<std::atomic<Buckets*>, kStatStripes> stripes_{};
  StripedCounter count_;
};

struct CommandStats {
  StripedCounter calls;  // (counted by every command: striped)
  StripedCounter usec;
  std::atomic<uint64_t> rejected_calls{0};
  std::atomic<uint64_t> failed_calls{0};
  LatencyHistogram latency;
};

class Stats {
 public:
  std::atomic<uint64_t> total_connections_received{0};
  StripedCounter total_commands_processed;  // (these three change with every command: striped)
  std::atomic<uint64_t> rejected_connections{0};
  StripedCounter total_net_input_bytes;
  StripedCounter total_net_output_bytes;
  std::atomic<uint64_t> keyspace_hits{0};
  std::atomic<uint64_t> keyspace_misses{0};
  std::atomic<uint64_t> expired_keys{0};
  std::atomic<uint64_t> total_error_replies{0};
  std::atomic<uint64_t> unexpected_error_replies{0};
  std::atomic<uint64_t> client_output_limit_disconnections{0};
  std::atomic<uint64_t> client_query_buffer_limit_disconnections{0};
  std::atomic<uint64_t> tls_handshake_errors{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<int64_t> instantaneous_ops_per_sec{0};
  std::atomic<int64_t> instantaneous_input_kbps_x100{0};
  std::atomic<int64_t> instantaneous_output_kbps_x100{0};
  std::atomic<uint64_t> blocked_on_output{0};
  std::atomic<uint64_t> write_groups{0};          // group commits (one RocksDB write each)
  std::atomic<uint64_t> write_group_commands{0};  // commands whose writes they carried
  // Calls run as part of a combined run (combine-commands), and the runs.
  std::atomic<uint64_t> combined_calls{0};
  std::atomic<uint64_t> combined_runs{0};
  // Writes set aside because another io thread's lock batch held their key (Connection::Park).
  std::atomic<uint64_t> parked_commands{0};
  // Connections moved to another io thread (key-affinity), there or back.
  std::atomic<uint64_t> client_moves{0};

  // Per command (name as in the table); created on first use. The reference stays valid for the
  // life of the Stats object (resets zero the counters in place), so callers may keep it.
  CommandStats& For(const std::string& name);
  // Snapshot of the commands with calls, rejected_calls or failed_calls above zero (as Redis's
  // INFO commandstats shows them), sorted by name.
  std::vector<std::pair<std::string, CommandStats*>> All();
  void ResetCommands();
  // Counts one error reply: total_error_replies and, for INFO errorstats, its code: the first
  // word when it is all upper-case letters ("ERR", "WRONGTYPE", "NOAUTH"), else "ERR". A leading
  // '-' is ignored.
  void CountError(std::string_view message);
  std::map<std::string, uint64_t> Errors();
  // Zeroes every counter, command stats, error stats and the instantaneous metrics.
  void Reset();

  // Called every 100 ms to compute instantaneous metrics: each sample is the rate since the
  // previous call; the instantaneous_* values are the mean of the last kSamples samples.
  void Sample();
  // Sample() with an explicit clock (milliseconds, any monotonic origin); for tests.
  void SampleAt(int64_t now_ms);

 private:
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<CommandStats>> commands_;
  std::map<std::string, uint64_t> errors_;
  // Sampling ring for instantaneous metrics.
  static constexpr int kSamples = 16;
  int sample_idx_ = 0;
  std::array<uint64_t, kSamples> ops_samples_{};
  std::array<uint64_t, kSamples> in_samples_{};
  std::array<uint64_t, kSamples> out_samples_{};
  uint64_t last_ops_ = 0, last_in_ = 0, last_out_ = 0;
  int64_t last_sample_ms_ = 0;
  bool sampled_ = false;  // whether last_* hold a sample yet
};

}  // namespace cuckood::server
