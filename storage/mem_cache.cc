#include "storage/mem_cache.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace cuckood::storage {

namespace {
std::atomic<uint64_t> next_cache_id{1};
}  // namespace

MemCache::MemCache(uint64_t capacity_bytes, size_t shards)
    : capacity_(capacity_bytes),
      shard_capacity_(capacity_bytes / std::max<size_t>(shards, 1)),
      id_(next_cache_id.fetch_add(1)) {
  for (size_t i = 0; i < std::max<size_t>(shards, 1); ++i) {
    shards_.push_back(std::make_unique<Shard>());
  }
}

uint64_t MemCache::Cost(const Entry& e) {
  return e.key.size() + (e.value ? e.value->size() : 0) + 64;  // 64: list node + map slot
}

size_t MemCache::ShardIndex(std::string_view key) const {
  // A cheap mix of the key's last 8 bytes (page keys end with the page index, metadata keys
  // with the key name); the shard's map hashes the whole key.
  uint64_t tail = 0;
  const size_t n = std::min<size_t>(key.size(), 8);
  std::memcpy(&tail, key.data() + key.size() - n, n);
  tail ^= key.size();
  // (MurmurHash3's 64-bit finaliser: every input bit reaches the low bits used below.)
  tail ^= tail >> 33;
  tail *= 0xff51afd7ed558ccdULL;
  tail ^= tail >> 33;
  tail *= 0xc4ceb9fe1a85ec53ULL;
  tail ^= tail >> 33;
  return tail % shards_.size();
}

void MemCache::Touch(Shard& s, std::list<Entry>::iterator it) {
  if (s.inserts - it->stamp > s.map.size() / 4) {
    s.lru.splice(s.lru.begin(), s.lru, it);
    it->stamp = s.inserts;
  }
}

bool MemCache::Get(std::string_view key, std::optional<std::string>* value) {
  Value shared;
  if (!GetShared(key, &shared)) {
    return false;
  }
  if (shared) {
    *value = *shared;
  } else {
    value->reset();
  }
  return true;
}

bool MemCache::GetShared(std::string_view key, Value* value, uint64_t* epoch) {
  Shard& s = ShardOf(key);
  std::lock_guard lock(s.mu);
  if (epoch != nullptr) {
    *epoch = s.epoch.load(std::memory_order_relaxed);
  }
  return Find(s, key, value);
}

bool MemCache::Find(Shard& s, std::string_view key, Value* value) {
  auto it = s.map.find(key);
  if (it == s.map.end()) {
    ++s.misses;
    return false;
  }
  Touch(s, it->second);
  *value = it->second->value;
  ++s.hits;
  return true;
}

void MemCache::GetSharedMany(std::span<const std::string_view> keys, Value* values, bool* found) {
  // The keys in shard order (a counting sort), then one lock per shard.
  thread_local std::vector<uint32_t> shard_of;
  thread_local std::vector<uint32_t> order;
  thread_local std::vector<uint32_t> start;
  const size_t n = keys.size();
  shard_of.resize(n);
  order.resize(n);
  start.assign(shards_.size() + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    shard_of[i] = static_cast<uint32_t>(ShardIndex(keys[i]));
    ++start[shard_of[i] + 1];
  }
  for (size_t k = 1; k < start.size(); ++k) {
    start[k] += start[k - 1];
  }
  for (size_t i = 0; i < n; ++i) {
    order[start[shard_of[i]]++] = static_cast<uint32_t>(i);
  }
  // (start[k] is now the end of shard k's run)
  size_t pos = 0;
  while (pos < n) {
    const uint32_t shard = shard_of[order[pos]];
    Shard& s = *shards_[shard];
    std::lock_guard lock(s.mu);
    for (; pos < n && shard_of[order[pos]] == shard; ++pos) {
      const uint32_t i = order[pos];
      found[i] = Find(s, keys[i], &values[i]);
    }
  }
  if (n > 16384) {  // (a huge lookup's buffers are not kept by the thread)
    std::vector<uint32_t>().swap(shard_of);
    std::vector<uint32_t>().swap(order);
  }
}

uint64_t MemCache::Sum(uint64_t Shard::*counter) const {
  uint64_t total = 0;
  for (auto& s : shards_) {
    std::lock_guard lock(s->mu);
    total += (*s).*counter;
  }
  return total;
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
  ++s.inserts;
  auto it = s.map.find(key);
  if (it != s.map.end()) {
    s.bytes -= Cost(*it->second);
    it->second->value = std::move(value);
    s.bytes += Cost(*it->second);
    s.lru.splice(s.lru.begin(), s.lru, it->second);
    it->second->stamp = s.inserts;
  } else {
    s.lru.push_front(Entry{std::string(key), std::move(value), s.inserts});
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

void MemCache::Erase(std::string_view key) {
  Shard& s = ShardOf(key);
  std::lock_guard lock(s.mu);
  ++s.epoch;
  auto it = s.map.find(key);
  if (it != s.map.end()) {
    auto entry = it->second;
    s.bytes -= Cost(*entry);
    s.map.erase(it);
    s.lru.erase(entry);
  }
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
