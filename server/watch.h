// WATCH: modification counters of the keys some client watches (only those keys), so EXEC can
// tell whether a watched key changed since WATCH. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cuckood::server {

struct Client;

class WatchRegistry {
 public:
  // The id of key of database db (what Client::watched holds).
  static std::string Id(uint16_t db, std::string_view key);
  // Registers a watch on key; returns the key's current counter.
  uint64_t Watch(uint16_t db, std::string_view key);
  // The counter of a watched key (UINT64_MAX when nobody watches it).
  uint64_t Version(const std::string& id);
  // Drops every watch of the client (EXEC, DISCARD, UNWATCH, RESET, disconnect).
  void UnwatchAll(Client& client);
  // A write touched these keys: clients watching them will see EXEC fail. Called while the
  // keys' stripes are held, so EXEC (which holds them too) sees the change or not at all.
  void Touch(uint16_t db, const std::vector<std::string_view>& keys);
  // FLUSHDB (db) / FLUSHALL (nullopt): every watched key of the database(s) is touched.
  void TouchAll(std::optional<uint16_t> db = std::nullopt);
  // The keys watched in database db (SWAPDB).
  std::vector<std::string> Keys(uint16_t db);

 private:
  struct Entry {
    uint64_t version = 0;
    uint32_t watchers = 0;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> watches_;
  std::atomic<size_t> count_{0};  // watches_.size(), read without the mutex
  uint64_t clock_ = 0;
};

}  // namespace cuckood::server
