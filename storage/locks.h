// Striped key locks.
//
// Threading model: each connection runs on one io thread; commands that write take the stripes of
// every key they touch exclusively through a LockGuard (sorted and de-duplicated, so two commands
// can never deadlock), and hold them until their write batch is queued for RocksDB
// (Engine::Submit, which stores writes in the order they are queued) and the in-memory cache
// updated; the write itself may complete after they are released (replies wait for it). Commands
// that read keys take their stripes shared (without waiting: a reader that cannot take them reads
// a RocksDB snapshot instead). MULTI/EXEC takes the stripes of every key of every queued command
// at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string_view>
#include <vector>

namespace cuckood::storage {

class LockManager {
 public:
  explicit LockManager(size_t stripes = 4096);

  size_t StripeOf(uint16_t ns, std::string_view key) const;
  size_t stripes() const { return mutexes_.size(); }
  std::shared_mutex& stripe(size_t i) { return mutexes_[i]; }

 private:
  std::vector<std::shared_mutex> mutexes_;
};

// Holds a set of stripes for its lifetime, exclusively (writers) or shared (readers). Movable,
// not copyable.
class LockGuard {
 public:
  LockGuard() = default;
  LockGuard(LockManager* mgr, std::vector<size_t> stripes, bool shared = false);
  ~LockGuard();
  LockGuard(LockGuard&& other) noexcept;
  LockGuard& operator=(LockGuard&& other) noexcept;
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

  // Takes the stripes shared without waiting; nullopt (holding nothing) when a writer has one.
  static std::optional<LockGuard> TryShared(LockManager* mgr, std::vector<size_t> stripes);

  bool holds(size_t stripe) const;
  // Whether every stripe of the sorted, de-duplicated list is held.
  bool covers(const std::vector<size_t>& stripes) const;
  // Adds the stripes of the sorted, de-duplicated list that are not held yet, in this guard's
  // mode, without waiting: true when all were taken; false (nothing added) when one is busy. It
  // never blocks, so a thread holding stripes can grow its set out of order without deadlock.
  bool TryAdd(const std::vector<size_t>& stripes);
  size_t size() const { return stripes_.size(); }
  void Release();

 private:
  LockManager* mgr_ = nullptr;
  std::vector<size_t> stripes_;
  bool shared_ = false;
};

}  // namespace cuckood::storage
