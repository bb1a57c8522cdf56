// The client registry: every open client connection by id (CLIENT LIST / KILL, INFO clients,
// and the shutdown, which waits for connections to finish). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace cuckood::server {

class Connection;

class ClientRegistry {
 public:
  uint64_t NextId() { return ++ids_; }
  void Register(const std::shared_ptr<Connection>& conn);
  void Unregister(uint64_t id);
  // The open connections, by id.
  std::vector<std::shared_ptr<Connection>> All();
  size_t connected() const { return connected_.load(); }
  // Waits until every connection is unregistered or the timeout passes; then forgets them all.
  void WaitAllGone(std::chrono::milliseconds timeout);

 private:
  std::mutex mu_;
  std::condition_variable gone_;
  std::unordered_map<uint64_t, std::weak_ptr<Connection>> conns_;
  std::atomic<size_t> connected_{0};
  std::atomic<uint64_t> ids_{0};
};

}  // namespace cuckood::server
