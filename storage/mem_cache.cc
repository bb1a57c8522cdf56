#include "storage/mem_cache.h"

namespace cuckood::storage {

MemCache::MemCache(uint64_t capacity_bytes, size_t shards)
    : capacity_(capacity_bytes), shard_capacity_(capacity_bytes / std::max<size_t>(shards, 1)) {
  for (size_t i = 0; i < std::max<size_t>(shards, 1); ++i) {
    shards_.push_back(std::make_unique<Shard>());
  }
}

uint64_t MemCache::Cost(const Entry& e) {
  return e.key.size() + (e.value ? e.value->size() : 0) + 64;  // 64: list node + map slot
}

MemCache::Shard& MemCache::ShardOf(std::string_view key) {
  return *shards_[std::hash<std::string_view>{}(key) % shards_.size()];
}

bool MemCache::Get(std::string_view key, std::optional<std::string>* value) {
  Shard& s = ShardOf(key);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(key);
  if (it == s.map.end()) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  s.lru.splice(s.lru.begin(), s.lru, it->second);
  if (it->second->value) {
    *value = *it->second->value;
  } else {
    value->reset();
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool MemCache::GetShared(std::string_view key, Value* value) {
  Shard& s = ShardOf(key);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(key);
  if (it == s.map.end()) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  s.lru.splice(s.lru.begin(), s.lru, it->second);
  *value = it->second->value;
  hits_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

uint64_t MemCache::Epoch(std::string_view key) {
  Shard& s = ShardOf(key);
  std::lock_guard lock(s.mu);
  return s.epoch;
}

void MemCache::Insert(Shard& s, std::string_view key, Value value) {
  if (shard_capacity_ == 0) {
    return;
  }
  auto it = s.map.find(key);
  if (it != s.map.end()) {
    s.bytes -= Cost(*it->second);
    it->second->value = std::move(value);
    s.bytes += Cost(*it->second);
    s.lru.splice(s.lru.begin(), s.lru, it->second);
  } else {
    s.lru.push_front(Entry{std::string(key), std::move(value)});
    s.map.emplace(s.lru.front().key, s.lru.begin());
    s.bytes += Cost(s.lru.front());
  }
  while (s.bytes > shard_capacity_ && !s.lru.empty()) {
    auto& victim = s.lru.back();
    s.bytes -= Cost(victim);
    s.map.erase(victim.key);
    s.lru.pop_back();
  }
}

void MemCache::Fill(std::string_view key, std::optional<std::string> value, uint64_t epoch) {
  Fill(key, Share(std::move(value)), epoch);
}

void MemCache::Fill(std::string_view key, Value value, uint64_t epoch) {
  Shard& s = ShardOf(key);
  std::lock_guard lock(s.mu);
  if (s.epoch != epoch) {
    return;  // a writer changed this shard since the caller read RocksDB
  }
  Insert(s, key, std::move(value));
}

void MemCache::Put(std::string_view key, std::optional<std::string> value) {
  Put(key, Share(std::move(value)));
}

void MemCache::Put(std::string_view key, Value value) {
  Shard& s = ShardOf(key);
  std::lock_guard lock(s.mu);
  ++s.epoch;
  Insert(s, key, std::move(value));
}

void MemCache::Clear() {
  for (auto& s : shards_) {
    std::lock_guard lock(s->mu);
    ++s->epoch;
    s->map.clear();
    s->lru.clear();
    s->bytes = 0;
  }
}

uint64_t MemCache::bytes() const {
  uint64_t total = 0;
  for (auto& s : shards_) {
    std::lock_guard lock(s->mu);
    total += s->bytes;
  }
  return total;
}

}  // namespace cuckood::storage
