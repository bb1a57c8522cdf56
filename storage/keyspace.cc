// Generic key operations of Db: existence, deletion, expiry, rename, scan, flush, strings.
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <random>
#include <thread>

#include "storage/db.h"
#include "storage/page_cache.h"
#include "storage/write_group.h"

namespace cuckood::storage {
namespace {

constexpr size_t kScanCursorSlots = 4096;
constexpr size_t kNamespaces = 65536;

std::string NsPrefix(uint16_t ns) {
  std::string s(2, '\0');
  s[0] = static_cast<char>(ns >> 8);
  s[1] = static_cast<char>(ns & 0xff);
  return s;
}

// End of the key range of namespace ns (exclusive).
std::string NsEnd(uint16_t ns) {
  if (ns == 0xffff) {
    return std::string(3, '\xff');
  }
  return NsPrefix(static_cast<uint16_t>(ns + 1));
}

bool GlobMatchImpl(const char* p, const char* pend, const char* s, const char* send, bool nocase,
                   int depth) {
  if (depth > 1000) {
    return false;
  }
  auto lower = [nocase](char c) {
    return nocase ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c;
  };
  while (p < pend) {
    switch (*p) {
      case '*':
        while (p + 1 < pend && p[1] == '*') {
          ++p;
        }
        if (p + 1 == pend) {
          return true;
        }
        for (const char* t = s; t <= send; ++t) {
          if (GlobMatchImpl(p + 1, pend, t, send, nocase, depth + 1)) {
            return true;
          }
        }
        return false;
      case '?':
        if (s == send) {
          return false;
        }
        ++s;
        break;
      case '[': {
        if (s == send) {
          return false;
        }
        ++p;
        bool negate = p < pend && *p == '^';
        if (negate) {
          ++p;
        }
        bool match = false;
        while (p < pend && *p != ']') {
          if (*p == '\\' && p + 1 < pend) {
            ++p;
            match |= lower(*p) == lower(*s);
          } else if (p + 2 < pend && p[1] == '-') {
            char a = lower(p[0]);
            char b = lower(p[2]);
            if (a > b) {
              std::swap(a, b);
            }
            char c = lower(*s);
            match |= c >= a && c <= b;
            p += 2;
          } else {
            match |= lower(*p) == lower(*s);
          }
          ++p;
        }
        if (negate) {
          match = !match;
        }
        if (!match) {
          return false;
        }
        ++s;
        break;
      }
      case '\\':
        if (p + 1 < pend) {
          ++p;
        }
        [[fallthrough]];
      default:
        if (s == send || lower(*p) != lower(*s)) {
          return false;
        }
        ++s;
        break;
    }
    if (p < pend) {
      ++p;
    }
  }
  return s == send;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view text, bool nocase) {
  return GlobMatchImpl(pattern.data(), pattern.data() + pattern.size(), text.data(),
                       text.data() + text.size(), nocase, 0);
}

Db::Db(Engine* engine, size_t lock_stripes, uint64_t cache_bytes)
    : engine_(engine),
      ns_of_db_(new std::atomic<uint16_t>[kNamespaces]),
      db_of_ns_(new std::atomic<uint16_t>[kNamespaces]),
      locks_(lock_stripes),
      mem_(cache_bytes),
      page_handle_entries_(std::clamp<uint64_t>(
          cache_bytes / 2048 / std::max(1U, std::thread::hardware_concurrency()), 1024, 131072)) {
  scan_cursors_.resize(kScanCursorSlots);
  mem_.set_on_erase([this](std::string_view key) { chain_indexes_.OnCacheErase(key); });
  for (size_t i = 0; i < kNamespaces; ++i) {
    ns_of_db_[i].store(static_cast<uint16_t>(i), std::memory_order_relaxed);
    db_of_ns_[i].store(static_cast<uint16_t>(i), std::memory_order_relaxed);
  }
  if (engine_ != nullptr) {
    (void)LoadDatabaseMap();  // (a record that cannot be read leaves every database in place)
  }
}

namespace {

// kDbMapKey's value: (database, namespace) pairs, u16 LE each, for every database not under its
// own namespace. nullopt when malformed (odd length, not a permutation).
std::optional<std::vector<std::pair<uint16_t, uint16_t>>> DecodeDbMap(std::string_view raw) {
  if (raw.size() % 4 != 0) {
    return std::nullopt;
  }
  std::vector<std::pair<uint16_t, uint16_t>> pairs;
  auto u16 = [&](size_t at) {
    return static_cast<uint16_t>(static_cast<uint8_t>(raw[at]) |
                                 (static_cast<uint16_t>(static_cast<uint8_t>(raw[at + 1])) << 8));
  };
  for (size_t i = 0; i < raw.size(); i += 4) {
    pairs.emplace_back(u16(i), u16(i + 2));
  }
  std::vector<uint16_t> dbs;
  std::vector<uint16_t> nss;
  for (const auto& [db, ns] : pairs) {
    dbs.push_back(db);
    nss.push_back(ns);
  }
  std::sort(dbs.begin(), dbs.end());
  std::sort(nss.begin(), nss.end());
  if (dbs != nss || std::adjacent_find(dbs.begin(), dbs.end()) != dbs.end()) {
    return std::nullopt;  // the databases named must be exactly the namespaces they take
  }
  return pairs;
}

}  // namespace

Status Db::LoadDatabaseMap() {
  std::string raw;
  auto s = engine_->db()->Get(rocksdb::ReadOptions(), engine_->default_cf(), std::string(kDbMapKey),
                              &raw);
  if (!s.ok() && !s.IsNotFound()) {
    return Engine::FromRocks(s);
  }
  std::vector<std::pair<uint16_t, uint16_t>> pairs;
  if (s.ok()) {
    auto decoded = DecodeDbMap(raw);
    if (!decoded) {
      return Status(Code::kCorruption, "corrupt database map record");
    }
    pairs = std::move(*decoded);
  }
  for (size_t i = 0; i < kNamespaces; ++i) {
    ns_of_db_[i].store(static_cast<uint16_t>(i), std::memory_order_relaxed);
    db_of_ns_[i].store(static_cast<uint16_t>(i), std::memory_order_relaxed);
  }
  for (const auto& [db, ns] : pairs) {
    ns_of_db_[db].store(ns, std::memory_order_relaxed);
    db_of_ns_[ns].store(db, std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_release);
  return Status::Ok();
}

Status Db::SwapDatabases(uint16_t a, uint16_t b) {
  if (a == b) {
    return Status::Ok();
  }
  const uint16_t ns_a = Namespace(a);
  const uint16_t ns_b = Namespace(b);
  // The record lists every database that is not under its own namespace, after the swap.
  std::string record;
  auto put16 = [&record](uint16_t v) {
    record.push_back(static_cast<char>(v & 0xff));
    record.push_back(static_cast<char>(v >> 8));
  };
  for (size_t i = 0; i < kNamespaces; ++i) {
    uint16_t ns = ns_of_db_[i].load(std::memory_order_relaxed);
    if (i == a) {
      ns = ns_b;
    } else if (i == b) {
      ns = ns_a;
    }
    if (ns != i) {
      put16(static_cast<uint16_t>(i));
      put16(ns);
    }
  }
  rocksdb::WriteBatch batch;
  if (record.empty()) {
    (void)batch.Delete(engine_->default_cf(), std::string(kDbMapKey));
  } else {
    (void)batch.Put(engine_->default_cf(), std::string(kDbMapKey), record);
  }
  auto s = Commit(kAlone, &batch, nullptr, {});
  if (!s.ok()) {
    return s;
  }
  ns_of_db_[a].store(ns_b, std::memory_order_release);
  ns_of_db_[b].store(ns_a, std::memory_order_release);
  db_of_ns_[ns_b].store(a, std::memory_order_release);
  db_of_ns_[ns_a].store(b, std::memory_order_release);
  return Status::Ok();
}

Status Db::Commit(const Scope& scope, rocksdb::WriteBatch* batch, PageCache* pages,
                  std::initializer_list<MetaChange> metas) {
  if (scope.group != nullptr) {
    // Earlier changes reach RocksDB first.
    if (auto s = scope.group->Commit(); !s.ok()) {
      return s;
    }
  }
  auto s = engine_->Write(batch);
  if (!s.ok()) {
    return s;
  }
  if (pages != nullptr) {
    pages->Publish();
  }
  for (const auto& m : metas) {
    mem_.Put(MetaCacheKey(m.meta_key),
             m.meta ? std::optional<std::string>(EncodeMetadata(*m.meta)) : std::nullopt);
  }
  return Status::Ok();
}

StatusOr<std::optional<Metadata>> Db::GetWith(const Scope& scope, const rocksdb::ReadOptions& ro,
                                              uint16_t ns, std::string_view key) {
  // The cache key ('m' + the record's key) in the thread's buffer: the record's key is its tail.
  // (Every filter write reads its metadata here first: no allocation for the keys, and the
  // cached value is read where it is, not copied.)
  thread_local std::string t_key;
  std::string& ck = t_key;
  ck.assign(1, 'm');
  AppendMetaKey(&ck, ns, key);
  const std::string_view mk = std::string_view(ck).substr(1);
  const bool use_cache = ro.snapshot == nullptr && !scope.snapshot_reads();
  std::string read;      // a record read from RocksDB
  MemCache::Value held;  // or the cache's or the write group's
  std::string_view raw;
  if (auto* group = use_cache ? scope.group : nullptr;
      group != nullptr && group->Lookup(ck, &held)) {
    // Written by an earlier command of the scope's write group.
    if (!held) {
      return std::optional<Metadata>();
    }
    raw = *held;
  } else if (use_cache && mem_.GetShared(ck, &held)) {
    if (!held) {
      return std::optional<Metadata>();
    }
    raw = *held;
  } else {
    const uint64_t epoch = use_cache ? mem_.Epoch(ck) : 0;
    if (use_cache && scope.stripes_held) {
      engine_->SettleKey(mk);
    } else if (ro.snapshot == nullptr) {
      engine_->Settle();
    }
    auto s = engine_->db()->Get(ro, engine_->metadata_cf(), mk, &read);
    if (use_cache && (s.ok() || s.IsNotFound())) {
      mem_.Fill(ck, s.ok() ? std::optional<std::string>(read) : std::nullopt, epoch);
    }
    if (s.IsNotFound()) {
      return std::optional<Metadata>();
    }
    if (!s.ok()) {
      return Engine::FromRocks(s);
    }
    raw = read;
  }
  auto meta = DecodeMetadata(raw);
  if (!meta) {
    return Status(Code::kCorruption, "corrupt metadata record");
  }
  if (meta->expire_ms != 0 && meta->Expired(NowMs())) {  // (the clock only when it matters)
    return std::optional<Metadata>();
  }
  return std::optional<Metadata>(std::move(*meta));
}

namespace {

// Per thread: the metadata last looked up for many keys, decoded. A slot stays valid while the
// key's write counter in the cache is unchanged (MemCache::Version): every change of a metadata
// record is published to the cache under the key's stripe lock, which the caller holds, so a
// lookup of a key seen before takes no cache lock and decodes nothing. Slots are direct-mapped
// by the key's hash; enough of them that a thousand keys read in turn mostly keep theirs (with
// 64, lookups over 1,000 filters found their slot taken by another key nine times in ten; with
// 2,048, a fifth of the keys still shared a slot with another: 8,192, 512 KiB a thread, leave
// about one in nine sharing).
struct MetaSlot {
  uint64_t cache_id = 0;  // MemCache::id(); 0 = empty
  MemCache::Stamp stamp;  // cache_key's write counter when view was read
  std::string cache_key;
  std::shared_ptr<const Db::MetaView> view;  // null = no such key
};
constexpr size_t kMetaSlots = 8192;
thread_local std::array<MetaSlot, kMetaSlots> t_meta_slots;
// The slot of key in namespace ns, found from the key itself: its cache key ('m', ns, the key's
// cluster slot, the key) is built only when the slot does not hold it, so a lookup that finds
// its slot computes no CRC16 for the key's cluster slot.
MetaSlot& MetaSlotOf(uint16_t ns, std::string_view key) {
  const size_t h = std::hash<std::string_view>{}(key) ^ (size_t{ns} * 0x9E3779B97F4A7C15ULL);
  return t_meta_slots[h % kMetaSlots];
}
// A MetaView::id: the thread's number in the high bits, a count in the low ones.
uint64_t NewViewId() {
  static std::atomic<uint64_t> next_thread{1};
  thread_local const uint64_t base = next_thread.fetch_add(1) << 40;
  thread_local uint64_t count = 0;
  return base | (++count & ((uint64_t{1} << 40) - 1));
}
thread_local std::string t_meta_cache_key;

}  // namespace

StatusOr<std::shared_ptr<const Db::MetaView>> Db::LookupMeta(const Scope& scope,
                                                             const rocksdb::ReadOptions& ro,
                                                             uint16_t ns, std::string_view key) {
  using ViewPtr = std::shared_ptr<const MetaView>;
  // (previous: the view this one replaces in the thread's slot, whose id it keeps when their
  // pages are the same; id_slot: false for a view that is not kept in a slot)
  auto make_view = [&](std::string_view raw, const MetaView* previous = nullptr,
                       bool id_slot = false) -> StatusOr<ViewPtr> {
    auto meta = DecodeMetadata(raw);
    if (!meta) {
      return Status(Code::kCorruption, "corrupt metadata record");
    }
    auto view = std::make_shared<MetaView>();
    view->meta = std::move(*meta);
    if (view->meta.type == KeyType::kCuckoo) {
      view->page_prefix = PagePrefix(ns, key, view->meta);
    }
    if (id_slot) {
      view->id = previous != nullptr && previous->page_prefix == view->page_prefix ? previous->id
                                                                                   : NewViewId();
    }
    return ViewPtr(std::move(view));
  };
  auto live = [](ViewPtr view) {
    if (view != nullptr && view->meta.expire_ms != 0 && view->meta.Expired(NowMs())) {
      return ViewPtr();
    }
    return view;
  };
  if (ro.snapshot != nullptr || scope.snapshot_reads()) {
    std::string raw;
    if (ro.snapshot == nullptr) {
      engine_->Settle();
    }
    auto s = engine_->db()->Get(ro, engine_->metadata_cf(), EncodeMetaKey(ns, key), &raw);
    if (s.IsNotFound()) {
      return ViewPtr();
    }
    if (!s.ok()) {
      return Engine::FromRocks(s);
    }
    auto view = make_view(raw);
    return view.ok() ? StatusOr<ViewPtr>(live(*view)) : view;
  }
  std::string& ck = t_meta_cache_key;
  MemCache::Value raw;
  auto build_ck = [&] {
    ck.assign(1, 'm');
    AppendMetaKey(&ck, ns, key);
  };
  if (scope.group != nullptr) {
    build_ck();
  }
  if (auto* group = scope.group; group != nullptr && group->Lookup(ck, &raw)) {
    // Written by an earlier command of the scope's write group (not in the cache yet).
    if (!raw) {
      return ViewPtr();
    }
    auto view = make_view(*raw);
    return view.ok() ? StatusOr<ViewPtr>(live(*view)) : view;
  }
  MetaSlot& slot = MetaSlotOf(ns, key);
  if (slot.cache_id == mem_.id() && slot.stamp.Valid() &&
      IsMetaCacheKeyOf(slot.cache_key, ns, key)) {
    return live(slot.view);
  }
  if (scope.group == nullptr) {
    build_ck();
  }
  uint64_t epoch = 0;
  if (!mem_.GetShared(ck, &raw, &epoch)) {  // (epoch: taken before RocksDB is read)
    std::string value;
    if (scope.stripes_held) {
      engine_->SettleKey(std::string_view(ck).substr(1));
    } else {
      engine_->Settle();
    }
    auto s = engine_->db()->Get(ro, engine_->metadata_cf(), std::string_view(ck).substr(1), &value);
    if (!s.ok() && !s.IsNotFound()) {
      return Engine::FromRocks(s);
    }
    if (s.ok()) {
      raw = std::make_shared<std::string>(std::move(value));
    }
    mem_.Fill(ck, raw, epoch);
  }
  ViewPtr view;
  if (raw) {
    auto made =
        make_view(*raw, slot.cache_id == mem_.id() ? slot.view.get() : nullptr, /*id_slot=*/true);
    if (!made.ok()) {
      return made;
    }
    view = std::move(*made);
  }
  slot.cache_id = mem_.id();
  slot.stamp = MemCache::Stamp{&mem_.Counter(ck), epoch};
  slot.cache_key = ck;
  slot.view = view;
  return live(std::move(view));
}

StatusOr<std::optional<Metadata>> Db::Get(const Scope& scope, uint16_t ns, std::string_view key) {
  return GetWith(scope, rocksdb::ReadOptions(), ns, key);
}

StatusOr<bool> Db::Exists(const Scope& scope, uint16_t ns, std::string_view key) {
  auto m = Get(scope, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  return m->has_value();
}

StatusOr<bool> Db::Delete(uint16_t ns, std::string_view key) {
  auto m = Get(kAlone, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value()) {
    return false;
  }
  // O(1): the pages of this version become unreachable; the pages compaction filter drops them.
  rocksdb::WriteBatch batch;
  const std::string mk = EncodeMetaKey(ns, key);
  (void)batch.Delete(engine_->metadata_cf(), mk);
  DropAlias(&batch, ns, **m);
  auto s = Commit(kAlone, &batch, nullptr, {{mk, nullptr}});
  if (!s.ok()) {
    return s;
  }
  return true;
}

StatusOr<bool> Db::SetExpire(uint16_t ns, std::string_view key, uint64_t expire_ms) {
  auto m = Get(kAlone, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value()) {
    return false;
  }
  Metadata meta = std::move(**m);
  meta.expire_ms = expire_ms;
  rocksdb::WriteBatch batch;
  const std::string mk = EncodeMetaKey(ns, key);
  (void)batch.Put(engine_->metadata_cf(), mk, EncodeMetadata(meta));
  auto s = Commit(kAlone, &batch, nullptr, {{mk, &meta}});
  if (!s.ok()) {
    return s;
  }
  return true;
}

StatusOr<bool> Db::Expire(uint16_t ns, std::string_view key) {
  return Delete(ns, key);
}

StatusOr<bool> Db::Rename(uint16_t ns, std::string_view src, std::string_view dst, bool nx) {
  auto m = Get(kAlone, ns, src);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value()) {
    return Status(Code::kNotFound, Reason::kKeyNotFound);
  }
  if (src == dst) {
    return !nx;
  }
  auto replaced = Get(kAlone, ns, dst);
  if (!replaced.ok()) {
    return replaced.status();
  }
  if (nx && replaced->has_value()) {
    return false;
  }
  Metadata meta = std::move(**m);
  rocksdb::WriteBatch batch;
  if (replaced->has_value()) {
    DropAlias(&batch, ns, **replaced);
  }
  if (meta.type == KeyType::kCuckoo) {
    // Pages stay under the name the filter was created with; an alias tells the pages
    // compaction filter which key owns them now. O(1) whatever the filter's size.
    std::string owner = meta.cuckoo.owner.empty() ? std::string(src) : meta.cuckoo.owner;
    if (owner == dst) {  // back under its own name
      DropAlias(&batch, ns, meta);
      meta.cuckoo.owner.clear();
    } else {
      meta.cuckoo.owner = owner;
      (void)batch.Put(engine_->default_cf(), EncodeAliasKey(ns, owner, meta.version), dst);
    }
  }
  const std::string src_key = EncodeMetaKey(ns, src);
  const std::string dst_key = EncodeMetaKey(ns, dst);
  (void)batch.Delete(engine_->metadata_cf(), src_key);
  (void)batch.Put(engine_->metadata_cf(), dst_key, EncodeMetadata(meta));
  auto s = Commit(kAlone, &batch, nullptr, {{src_key, nullptr}, {dst_key, &meta}});
  if (!s.ok()) {
    return s;
  }
  return true;
}

void Db::DropAlias(rocksdb::WriteBatch* batch, uint16_t ns, const Metadata& old) {
  if (old.type == KeyType::kCuckoo && !old.cuckoo.owner.empty()) {
    (void)batch->Delete(engine_->default_cf(), EncodeAliasKey(ns, old.cuckoo.owner, old.version));
  }
}

Status Db::FlushDb(uint16_t ns) {
  rocksdb::WriteBatch batch;
  (void)batch.DeleteRange(engine_->metadata_cf(), NsPrefix(ns), NsEnd(ns));
  (void)batch.DeleteRange(engine_->pages_cf(), NsPrefix(ns), NsEnd(ns));
  std::string alias_begin(1, kAliasPrefix);
  alias_begin += NsPrefix(ns);
  std::string alias_end(1, kAliasPrefix);
  alias_end += NsEnd(ns);
  (void)batch.DeleteRange(engine_->default_cf(), alias_begin, alias_end);
  auto s = engine_->Write(&batch);
  mem_.Clear();
  return s;
}

Status Db::FlushAll() {
  rocksdb::WriteBatch batch;
  const std::string begin(1, '\0');
  const std::string end(4, '\xff');
  (void)batch.DeleteRange(engine_->metadata_cf(), begin, end);
  (void)batch.DeleteRange(engine_->pages_cf(), begin, end);
  (void)batch.DeleteRange(engine_->default_cf(), std::string(1, kAliasPrefix),
                          std::string(1, static_cast<char>(kAliasPrefix + 1)));
  auto s = engine_->Write(&batch);
  mem_.Clear();
  return s;
}

StatusOr<uint64_t> Db::DbSize(uint16_t ns) {
  SnapshotHolder snap(engine_);
  rocksdb::ReadOptions ro;
  ro.snapshot = snap.get();
  std::string end = NsEnd(ns);
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(engine_->db()->NewIterator(ro, engine_->metadata_cf()));
  uint64_t n = 0;
  const uint64_t now = NowMs();
  for (it->Seek(NsPrefix(ns)); it->Valid(); it->Next()) {
    uint64_t expire = 0;
    auto v = it->value();
    if (PeekExpire(std::string_view(v.data(), v.size()), &expire) &&
        (expire == 0 || expire > now)) {
      ++n;
    }
  }
  if (!it->status().ok()) {
    return Engine::FromRocks(it->status());
  }
  return n;
}

StatusOr<ScanPage> Db::Scan(uint16_t ns, uint64_t cursor, std::string_view pattern, uint64_t count,
                            std::string_view type_filter) {
  std::string start = NsPrefix(ns);
  if (cursor != 0) {
    std::lock_guard lock(scan_mu_);
    auto& slot = scan_cursors_[cursor % kScanCursorSlots];
    // Cursors are shared by all namespaces: one saved by another namespace's SCAN is unknown
    // here (resuming from it would walk that namespace's keys).
    if (slot.first == cursor && slot.second.compare(0, start.size(), start) == 0) {
      start = slot.second;
    }
    // An unknown (evicted) cursor restarts the walk: SCAN may repeat keys, never skip them.
  }
  SnapshotHolder snap(engine_);
  rocksdb::ReadOptions ro;
  ro.snapshot = snap.get();
  std::string end = NsEnd(ns);
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(engine_->db()->NewIterator(ro, engine_->metadata_cf()));
  ScanPage page;
  const uint64_t now = NowMs();
  uint64_t visited = 0;
  it->Seek(start);
  for (; it->Valid() && visited < std::max<uint64_t>(count, 1); it->Next(), ++visited) {
    uint16_t key_ns = 0;
    std::string_view user_key;
    auto k = it->key();
    if (!DecodeMetaKey(std::string_view(k.data(), k.size()), &key_ns, &user_key)) {
      continue;
    }
    auto v = it->value();
    auto meta = DecodeMetadata(std::string_view(v.data(), v.size()));
    if (!meta || meta->Expired(now)) {
      continue;
    }
    if (!pattern.empty() && !GlobMatch(pattern, user_key)) {
      continue;
    }
    if (!type_filter.empty() && !EqualsNoCase(type_filter, TypeName(meta->type))) {
      continue;
    }
    page.keys.emplace_back(user_key);
  }
  if (!it->status().ok()) {
    return Engine::FromRocks(it->status());
  }
  if (it->Valid()) {
    uint64_t id = ++scan_seq_;
    auto k = it->key();
    std::lock_guard lock(scan_mu_);
    scan_cursors_[id % kScanCursorSlots] = {id, std::string(k.data(), k.size())};
    page.cursor = id;
  }
  return page;
}

StatusOr<std::vector<std::string>> Db::Keys(uint16_t ns, std::string_view pattern) {
  std::vector<std::string> out;
  uint64_t cursor = 0;
  SnapshotHolder snap(engine_);
  rocksdb::ReadOptions ro;
  ro.snapshot = snap.get();
  std::string end = NsEnd(ns);
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(engine_->db()->NewIterator(ro, engine_->metadata_cf()));
  const uint64_t now = NowMs();
  for (it->Seek(NsPrefix(ns)); it->Valid(); it->Next()) {
    uint16_t key_ns = 0;
    std::string_view user_key;
    auto k = it->key();
    if (!DecodeMetaKey(std::string_view(k.data(), k.size()), &key_ns, &user_key)) {
      continue;
    }
    uint64_t expire = 0;
    auto v = it->value();
    if (!PeekExpire(std::string_view(v.data(), v.size()), &expire) ||
        (expire != 0 && expire <= now)) {
      continue;
    }
    if (GlobMatch(pattern, user_key)) {
      out.emplace_back(user_key);
    }
  }
  (void)cursor;
  if (!it->status().ok()) {
    return Engine::FromRocks(it->status());
  }
  return out;
}

StatusOr<std::optional<std::string>> Db::RandomKey(uint16_t ns) {
  auto keys = Keys(ns, "*");
  if (!keys.ok()) {
    return keys.status();
  }
  if (keys->empty()) {
    return std::optional<std::string>();
  }
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::optional<std::string>((*keys)[rng() % keys->size()]);
}

namespace {

// [begin, end) of the metadata keys of one slot: ns | slot | *.
std::pair<std::string, std::string> SlotBounds(uint16_t ns, uint16_t slot) {
  std::string begin = NsPrefix(ns);
  begin.push_back(static_cast<char>(slot >> 8));
  begin.push_back(static_cast<char>(slot & 0xff));
  std::string end = NsPrefix(ns);
  const uint32_t next = static_cast<uint32_t>(slot) + 1;
  if (next > 0xffff) {
    end = NsEnd(ns);
  } else {
    end.push_back(static_cast<char>(next >> 8));
    end.push_back(static_cast<char>(next & 0xff));
  }
  return {std::move(begin), std::move(end)};
}

// Calls visit(user key) for each live key of the slot until it returns false.
template <typename Visit>
Status ForEachKeyInSlot(Engine* engine, uint16_t ns, uint16_t slot, Visit visit) {
  auto [begin, end] = SlotBounds(ns, slot);
  SnapshotHolder snap(engine);
  rocksdb::ReadOptions ro;
  ro.snapshot = snap.get();
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(engine->db()->NewIterator(ro, engine->metadata_cf()));
  const uint64_t now = NowMs();
  for (it->Seek(begin); it->Valid(); it->Next()) {
    uint16_t key_ns = 0;
    std::string_view user_key;
    auto k = it->key();
    if (!DecodeMetaKey(std::string_view(k.data(), k.size()), &key_ns, &user_key)) {
      continue;
    }
    uint64_t expire = 0;
    auto v = it->value();
    if (PeekExpire(std::string_view(v.data(), v.size()), &expire) &&
        (expire == 0 || expire > now) && !visit(user_key)) {
      break;
    }
  }
  return it->status().ok() ? Status::Ok() : Engine::FromRocks(it->status());
}

}  // namespace

StatusOr<std::vector<std::string>> Db::KeysInSlot(uint16_t ns, uint16_t slot, uint64_t limit) {
  std::vector<std::string> out;
  if (limit == 0) {
    return out;
  }
  auto s = ForEachKeyInSlot(engine_, ns, slot, [&](std::string_view key) {
    out.emplace_back(key);
    return out.size() < limit;
  });
  if (!s.ok()) {
    return s;
  }
  return out;
}

StatusOr<uint64_t> Db::CountKeysInSlot(uint16_t ns, uint16_t slot) {
  uint64_t n = 0;
  auto s = ForEachKeyInSlot(engine_, ns, slot, [&](std::string_view) {
    ++n;
    return true;
  });
  if (!s.ok()) {
    return s;
  }
  return n;
}

StatusOr<uint64_t> Db::DiskUsage(const Scope& scope, uint16_t ns, std::string_view key) {
  auto m = Get(scope, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value()) {
    return Status(Code::kNotFound, Reason::kKeyNotFound);
  }
  const auto& meta = **m;
  std::string mk = EncodeMetaKey(ns, key);
  uint64_t total = mk.size() + EncodeMetadata(meta).size();
  if (meta.type != KeyType::kCuckoo) {
    return total;
  }
  // Small filters: the exact bytes of their live pages (RocksDB's estimate is too coarse inside
  // one data block). Large ones: RocksDB's estimate for the key range.
  constexpr uint64_t kExactPages = 4096;
  std::string prefix = PagePrefix(ns, key, meta);
  std::string end = prefix + std::string(6, '\xff');
  engine_->Settle();
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(engine_->db()->NewIterator(ro, engine_->pages_cf()));
  uint64_t pages = 0;
  uint64_t exact = 0;
  for (it->Seek(prefix); it->Valid() && pages < kExactPages; it->Next(), ++pages) {
    exact += it->key().size() + it->value().size();
  }
  if (!it->status().ok()) {
    return Engine::FromRocks(it->status());
  }
  if (!it->Valid()) {
    return total + exact;
  }
  return total + std::max(exact, engine_->ApproximateSize(engine_->pages_cf(), prefix, end));
}

Status Db::SetString(uint16_t ns, std::string_view key, std::string_view value, uint64_t expire_ms,
                     bool keep_ttl) {
  Metadata meta;
  meta.type = KeyType::kString;
  meta.value = std::string(value);
  meta.size = value.size();
  meta.expire_ms = expire_ms;
  auto old = Get(kAlone, ns, key);
  if (!old.ok()) {
    return old.status();
  }
  rocksdb::WriteBatch batch;
  if (old->has_value()) {
    if (keep_ttl) {
      meta.expire_ms = (*old)->expire_ms;
    }
    DropAlias(&batch, ns, **old);
  }
  const std::string mk = EncodeMetaKey(ns, key);
  (void)batch.Put(engine_->metadata_cf(), mk, EncodeMetadata(meta));
  return Commit(kAlone, &batch, nullptr, {{mk, &meta}});
}

}  // namespace cuckood::storage
