#include "storage/mem_cache.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "storage/buffer_pool.h"

namespace cuckood::storage {

namespace {
std::atomic<uint64_t> next_cache_id{1};

// Epoch-based reclamation of borrowed values. A thread in a section publishes in its slot the
// epoch it entered at (0 = not in a section). A value dropped by the cache is tagged with the
// epoch of the drop; it is freed once every slot is 0 or holds a later epoch: a section entered
// after the drop cannot find the value any more (it left the shard's index first, under the
// shard's lock, which the section's lookups take after publishing the slot).
struct alignas(64) SectionSlot {
  std::atomic<uint64_t> epoch{0};
};
struct SectionDomain {
  std::atomic<uint64_t> epoch{1};
  SectionSlot slots[MemCache::kSectionSlots];
  std::atomic<bool> taken[MemCache::kSectionSlots] = {};
  std::atomic<size_t> used{0};  // slots [0, used) have been taken at some time
};
SectionDomain g_sections;

struct ThreadSection {
  int slot = -1;  // -1: none yet, -2: none free
  int depth = 0;  // nested sections
  bool borrowing() const { return depth > 0 && slot >= 0; }
  ~ThreadSection() {
    if (slot >= 0) {
      g_sections.slots[slot].epoch.store(0, std::memory_order_seq_cst);
      g_sections.taken[slot].store(false, std::memory_order_release);
    }
  }
};
thread_local ThreadSection t_section;

// Retired values of a shard are reclaimed when this many have piled up, or these many bytes.
constexpr size_t kReclaimCount = 64;
constexpr uint64_t kReclaimBytes = 1 << 20;

}  // namespace

MemCache::ReadSection::ReadSection() {
  ThreadSection& t = t_section;
  if (t.depth++ > 0) {
    return;
  }
  if (t.slot == -1) {
    t.slot = -2;
    for (size_t i = 0; i < kSectionSlots; ++i) {
      bool expected = false;
      if (g_sections.taken[i].compare_exchange_strong(expected, true)) {
        t.slot = static_cast<int>(i);
        size_t used = g_sections.used.load();
        while (used < i + 1 && !g_sections.used.compare_exchange_weak(used, i + 1)) {
        }
        break;
      }
    }
  }
  if (t.slot < 0) {
    return;  // (owned values)
  }
  g_sections.slots[t.slot].epoch.store(g_sections.epoch.load(std::memory_order_seq_cst),
                                       std::memory_order_seq_cst);
}

MemCache::ReadSection::~ReadSection() {
  ThreadSection& t = t_section;
  if (--t.depth > 0 || t.slot < 0) {
    return;
  }
  g_sections.slots[t.slot].epoch.store(0, std::memory_order_seq_cst);
}

void MemCache::Retire(Shard& s, Value value) {
  if (!value) {
    return;
  }
  s.retired_bytes += value->size();
  s.retired.emplace_back(g_sections.epoch.load(std::memory_order_seq_cst), std::move(value));
  if (s.retired.size() >= kReclaimCount || s.retired_bytes >= kReclaimBytes) {
    Reclaim(s);
  }
}

void MemCache::Reclaim(Shard& s) {
  // Sections entered from now on publish a later epoch than any retired value's.
  g_sections.epoch.fetch_add(1, std::memory_order_seq_cst);
  uint64_t oldest = UINT64_MAX;
  const size_t used = g_sections.used.load(std::memory_order_seq_cst);
  for (size_t i = 0; i < used; ++i) {
    const uint64_t e = g_sections.slots[i].epoch.load(std::memory_order_seq_cst);
    if (e != 0 && e < oldest) {
      oldest = e;
    }
  }
  // Freed: values dropped before the oldest open section was entered.
  size_t kept = 0;
  for (auto& r : s.retired) {
    if (r.first >= oldest) {
      s.retired[kept++] = std::move(r);
    } else {
      s.retired_bytes -= r.second->size();
      RecycleValue(std::move(r.second));
    }
  }
  s.retired.resize(kept);
}

MemCache::MemCache(uint64_t capacity_bytes, size_t shards)
    : capacity_(capacity_bytes),
      shard_capacity_(capacity_bytes / std::max<size_t>(shards, 1)),
      id_(next_cache_id.fetch_add(1)) {
  for (size_t i = 0; i < std::max<size_t>(shards, 1); ++i) {
    shards_.push_back(std::make_unique<Shard>());
  }
}

MemCache::Entry::Entry(std::string_view k, uint64_t h, Value v)
    : key_size(static_cast<uint32_t>(k.size())), referenced(0), value(std::move(v)), hash(h) {
  char* to = inline_key;
  if (k.size() > kInlineKey) {
    long_key = std::make_unique<char[]>(k.size());
    to = long_key.get();
  }
  std::memcpy(to, k.data(), k.size());
}

uint64_t MemCache::Cost(const Entry& e) {
  // 64: the index's slots; the node is two cache lines, plus the key when it does not fit in
  return (e.key_size > kInlineKey ? e.key_size : 0) + (e.value ? e.value->size() : 0) + 128 + 64;
}

size_t MemCache::ShardIndex(std::string_view key) const {
  // A cheap mix of the key's last 8 bytes (page keys end with the page index, metadata keys
  // with the key name); the shard's index hashes the whole key.
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

void MemCache::PrefetchEntry(EntryIt it) {
  __builtin_prefetch(&*it);        // (the key's line)
  __builtin_prefetch(&it->value);  // (the value's)
}

void MemCache::Touch(Shard&, EntryIt it) {
  if (it->referenced == 0) {  // (the line is written once, not at every hit)
    it->referenced = 1;
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
  const uint64_t hash = Index::Hash(key);
  std::lock_guard lock(s.mu);
  if (epoch != nullptr) {
    *epoch = EpochOf(s, hash).load(std::memory_order_relaxed);
  }
  return Find(s, key, hash, value);
}

bool MemCache::Find(Shard& s, std::string_view key, uint64_t hash, Value* value, Stamp* stamp) {
  EntryIt* found = s.index.Find(hash, key);
  if (found == nullptr) {
    ++s.misses;
    return false;
  }
  if (stamp != nullptr) {
    stamp->counter = &EpochOf(s, hash);
    stamp->seen = stamp->counter->load(std::memory_order_relaxed);
  }
  const EntryIt it = *found;
  Touch(s, it);
  // The caller reads the value's size and bytes next: its string object is a cache miss of its
  // own, asked for now so that it overlaps the lookups of the command's other keys.
  __builtin_prefetch(it->value.get());
  if (t_section.borrowing()) {
    const Value& v = it->value;
    *value = Value(Value(), v.get());  // (aliasing an empty pointer: no reference counted)
  } else {
    *value = it->value;
  }
  ++s.hits;
  return true;
}

bool MemCache::Borrowing() {
  return t_section.borrowing();
}

void MemCache::CountKeptHits(uint64_t n) {
  thread_local const size_t slot =
      std::hash<std::thread::id>{}(std::this_thread::get_id()) % kKeptHitSlots;
  kept_hits_[slot].n.fetch_add(n, std::memory_order_relaxed);
}

uint64_t MemCache::hits() const {
  uint64_t total = Sum(&Shard::hits);
  for (const auto& k : kept_hits_) {
    total += k.n.load(std::memory_order_relaxed);
  }
  return total;
}

void MemCache::GetSharedMany(std::span<const std::string_view> keys, Value* values, bool* found,
                             Stamp* stamps) {
  // The keys in shard order (a counting sort), then one lock per shard.
  thread_local std::vector<uint32_t> shard_of;
  thread_local std::vector<uint32_t> order;
  thread_local std::vector<uint32_t> start;
  thread_local std::vector<uint64_t> hashes;
  const size_t n = keys.size();
  shard_of.resize(n);
  order.resize(n);
  hashes.resize(n);
  start.assign(shards_.size() + 1, 0);
  // Every key's index slot is asked for first, whatever its shard: their cache misses overlap
  // (a lookup of a few keys of each of many shards, e.g. the pages of many filters, would
  // otherwise wait for each shard's in turn).
  for (size_t i = 0; i < n; ++i) {
    shard_of[i] = static_cast<uint32_t>(ShardIndex(keys[i]));
    hashes[i] = Index::Hash(keys[i]);
    shards_[shard_of[i]]->index.PrefetchUnlocked(hashes[i]);
    ++start[shard_of[i] + 1];
  }
  for (size_t k = 1; k < start.size(); ++k) {
    start[k] += start[k - 1];
  }
  for (size_t i = 0; i < n; ++i) {
    order[start[shard_of[i]]++] = static_cast<uint32_t>(i);
  }
  // (start[k] is now the end of shard k's run)
  // Then every key's entry (where a key sits in its home slot: nearly always), one shard lock
  // at a time, before any is looked up: their misses overlap too.
  if (n > 1) {
    for (size_t pos = 0; pos < n;) {
      const uint32_t shard = shard_of[order[pos]];
      Shard& s = *shards_[shard];
      const size_t end = start[shard];
      std::lock_guard lock(s.mu);
      for (; pos < end; ++pos) {
        s.index.PeekHome(hashes[order[pos]], PrefetchEntry);
      }
    }
  }
  size_t pos = 0;
  while (pos < n) {
    const uint32_t shard = shard_of[order[pos]];
    Shard& s = *shards_[shard];
    std::lock_guard lock(s.mu);
    const size_t end = start[shard];
    for (; pos < end; ++pos) {
      const uint32_t i = order[pos];
      found[i] = Find(s, keys[i], hashes[i], &values[i], stamps ? &stamps[i] : nullptr);
    }
  }
  if (n > 16384) {  // (a huge lookup's buffers are not kept by the thread)
    std::vector<uint32_t>().swap(shard_of);
    std::vector<uint32_t>().swap(order);
    std::vector<uint64_t>().swap(hashes);
  }
}

void MemCache::GetSharedFew(std::span<const std::string_view> keys, Value* values, bool* found,
                            Stamp* stamps) {
  const size_t n = keys.size();
  if (n > kFewKeys) {
    GetSharedMany(keys, values, found, stamps);
    return;
  }
  uint32_t shard_of[kFewKeys];
  uint64_t hashes[kFewKeys];
  uint32_t order[kFewKeys];
  for (size_t i = 0; i < n; ++i) {
    shard_of[i] = static_cast<uint32_t>(ShardIndex(keys[i]));
    hashes[i] = Index::Hash(keys[i]);
    shards_[shard_of[i]]->index.PrefetchUnlocked(hashes[i]);
    order[i] = static_cast<uint32_t>(i);
  }
  // (an insertion sort of a few keys by shard; every shard's lock is taken once, in shard order:
  // no other caller holds more than one shard lock, so this cannot deadlock)
  for (size_t i = 1; i < n; ++i) {
    for (size_t j = i; j > 0 && shard_of[order[j - 1]] > shard_of[order[j]]; --j) {
      std::swap(order[j - 1], order[j]);
    }
  }
  for (size_t p = 0; p < n; ++p) {
    if (p == 0 || shard_of[order[p]] != shard_of[order[p - 1]]) {
      shards_[shard_of[order[p]]]->mu.lock();
    }
  }
  for (size_t p = 0; p < n; ++p) {
    const uint32_t i = order[p];
    shards_[shard_of[i]]->index.PeekHome(hashes[i], PrefetchEntry);
  }
  for (size_t p = 0; p < n; ++p) {
    const uint32_t i = order[p];
    found[i] =
        Find(*shards_[shard_of[i]], keys[i], hashes[i], &values[i], stamps ? &stamps[i] : nullptr);
  }
  for (size_t p = n; p-- > 0;) {
    if (p == 0 || shard_of[order[p]] != shard_of[order[p - 1]]) {
      shards_[shard_of[order[p]]]->mu.unlock();
    }
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
  const uint64_t hash = Index::Hash(key);
  std::lock_guard lock(s.mu);
  return EpochOf(s, hash).load(std::memory_order_relaxed);
}

void MemCache::Insert(Shard& s, std::string_view key, uint64_t hash, Value value, bool replace) {
  if (shard_capacity_ == 0) {
    return;
  }
  EntryIt* found = s.index.Find(hash, key);
  if (found != nullptr && !replace) {
    return;
  }
  if (found != nullptr) {
    const EntryIt it = *found;
    s.bytes -= Cost(*it);
    // (Not retired: Put's caller holds the key's stripe exclusively, so no section borrows
    // the key's value now; Fill does not replace.)
    RecycleValue(std::exchange(it->value, std::move(value)));
    s.bytes += Cost(*it);
    Touch(s, it);  // (a key written again is in use, as one looked up is)
  } else {
    s.lru.emplace_front(key, hash, std::move(value));
    s.index.Insert(hash, s.lru.begin());
    s.bytes += Cost(s.lru.front());
  }
  while (s.bytes > shard_capacity_ && !s.lru.empty()) {
    auto& victim = s.lru.back();
    if (victim.referenced != 0) {  // a second round (each pass clears a bit: this ends)
      victim.referenced = 0;
      s.lru.splice(s.lru.begin(), s.lru, std::prev(s.lru.end()));
      continue;
    }
    s.bytes -= Cost(victim);
    // (before the value is dropped: see Stamp)
    EpochOf(s, victim.hash).fetch_add(1, std::memory_order_seq_cst);
    s.index.Erase(victim.hash, victim.key());
    Retire(s, std::move(victim.value));
    s.lru.pop_back();
  }
}

void MemCache::Fill(std::string_view key, std::optional<std::string> value, uint64_t epoch) {
  Fill(key, Share(std::move(value)), epoch);
}

void MemCache::Fill(std::string_view key, Value value, uint64_t epoch) {
  Shard& s = ShardOf(key);
  const uint64_t hash = Index::Hash(key);
  std::lock_guard lock(s.mu);
  if (EpochOf(s, hash).load(std::memory_order_relaxed) != epoch) {
    return;  // a writer changed this key since the caller read RocksDB
  }
  // (Filled by another reader meanwhile: kept, since a section may have borrowed it.)
  Insert(s, key, hash, std::move(value), /*replace=*/false);
}

void MemCache::Put(std::string_view key, std::optional<std::string> value) {
  Put(key, Share(std::move(value)));
}

void MemCache::Put(std::string_view key, Value value) {
  Shard& s = ShardOf(key);
  const uint64_t hash = Index::Hash(key);
  std::lock_guard lock(s.mu);
  EpochOf(s, hash).fetch_add(1, std::memory_order_seq_cst);
  Insert(s, key, hash, std::move(value), /*replace=*/true);
}

void MemCache::Erase(std::string_view key) {
  {
    Shard& s = ShardOf(key);
    const uint64_t hash = Index::Hash(key);
    std::lock_guard lock(s.mu);
    EpochOf(s, hash).fetch_add(1, std::memory_order_seq_cst);
    if (EntryIt* found = s.index.Find(hash, key)) {
      const EntryIt entry = *found;
      s.bytes -= Cost(*entry);
      s.index.Erase(hash, key);
      Retire(s, std::move(entry->value));
      s.lru.erase(entry);
    }
  }
  if (on_erase_) {
    on_erase_(key);
  }
}

void MemCache::Clear() {
  for (auto& s : shards_) {
    std::lock_guard lock(s->mu);
    for (auto& e : s->epochs) {
      e.fetch_add(1, std::memory_order_seq_cst);
    }
    s->index.Clear();
    for (auto& e : s->lru) {
      Retire(*s, std::move(e.value));
    }
    s->lru.clear();
    s->bytes = 0;
  }
  if (on_erase_) {
    on_erase_({});
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
