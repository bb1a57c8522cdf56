#include "storage/page_cache.h"

#include <algorithm>
#include <cstring>

#include "storage/buffer_pool.h"
#include "storage/page_merge.h"
#include "storage/write_group.h"

namespace cuckood::storage {
namespace {

constexpr size_t kMaxPrefetchPages = 8192;
constexpr uint64_t kCheckpointDirtyPages = 2048;  // ~4 MiB of 2 KiB pages per batch
constexpr size_t kCheckpointCachedPages = 16384;
constexpr uint32_t kSkipScanMin = 32;  // cf-max-expansions' default: longer chains are unusual

}  // namespace

PageCache::PageCache(Engine* engine, const rocksdb::Snapshot* snapshot, std::string page_prefix,
                     const core::FilterMeta* meta, uint32_t page_size, MemCache* mem,
                     WriteGroup* group)
    : PageCache(engine, snapshot, static_cast<const std::string*>(nullptr), meta, page_size, mem,
                group) {
  prefix_owned_ = std::move(page_prefix);
  prefix_ = prefix_owned_;
}

PageCache::PageCache(Engine* engine, const rocksdb::Snapshot* snapshot,
                     const std::string* page_prefix, const core::FilterMeta* meta,
                     uint32_t page_size, MemCache* mem, WriteGroup* group)
    : engine_(engine),
      snapshot_(snapshot),
      prefix_(page_prefix != nullptr ? std::string_view(*page_prefix) : std::string_view()),
      meta_(meta),
      geo_(page_size, meta->bucket_size),
      mem_(snapshot == nullptr ? mem : nullptr),
      fill_block_cache_(mem == nullptr || mem->capacity() == 0),
      group_(mem_ != nullptr ? group : nullptr) {}

std::string_view PageCache::CacheKeyOf(uint32_t f, uint64_t page) {
  const size_t length = 1 + prefix_.size() + kPageKeySuffix;
  char* key = key_inline_;
  if (length > sizeof(key_inline_)) {
    key_buf_.resize(length);  // (a long key name: the buffer is allocated once)
    key = key_buf_.data();
  }
  if (!key_ready_) {
    key[0] = 'p';  // (PageCacheKey of a page key)
    std::memcpy(key + 1, prefix_.data(), prefix_.size());
    key_ready_ = true;
  }
  EncodePageKeySuffix(key + 1 + prefix_.size(), static_cast<uint16_t>(f),
                      static_cast<uint32_t>(page));
  return {key, length};
}

bool PageCache::CacheGet(std::string_view cache_key, MemCache::Value* value) {
  // A page the scope's write group changed is also in the in-memory cache unless evicted
  // since (the group puts its pages there at once, and nobody else writes them before it is
  // committed), so the group is only asked on a miss.
  return mem_->GetShared(cache_key, value) ||
         (group_ != nullptr && group_->Lookup(cache_key, value));
}

PageCache::~PageCache() {
  // Changes made in place in the write group's pages and not added (a failed command) are
  // undone, newest first.
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
    std::memcpy(it->at, undo_bytes_.data() + it->offset, it->length);
  }
  constexpr size_t kKeepUndo = 1024;
  if (undo_.capacity() > 0 && undo_.capacity() <= kKeepUndo && SpareUndo().capacity() == 0) {
    undo_.clear();
    undo_.swap(SpareUndo());
  }
}

rocksdb::ReadOptions PageCache::ReadOpts() const {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot_;
  ro.fill_cache = fill_block_cache_;
  if (snapshot_ == nullptr) {
    engine_->Settle();  // (RocksDB is read: it must hold what the cache may already show)
  }
  return ro;
}

rocksdb::ReadOptions PageCache::PointReadOpts(std::span<const std::string> keys) const {
  if (snapshot_ != nullptr || !stripe_held_) {
    return ReadOpts();
  }
  for (const auto& k : keys) {
    engine_->SettleKey(k);
  }
  rocksdb::ReadOptions ro;
  ro.fill_cache = fill_block_cache_;
  return ro;
}

uint64_t PageCache::Buckets(uint32_t f) {
  if (meta_->expansion == 1) {
    return core::SubFilterBuckets(*meta_, 0);  // (all equal: no table as long as the chain)
  }
  if (f >= buckets_.size()) {
    size_t old = buckets_.size();
    buckets_.resize(f + 1);
    for (size_t i = old; i <= f; ++i) {
      buckets_[i] = core::SubFilterBuckets(*meta_, static_cast<uint32_t>(i));
    }
  }
  return buckets_[f];
}

bool PageCache::OwnPage(const rocksdb::Slice& key, PageKeyParts* parts) const {
  std::string_view raw(key.data(), key.size());
  return raw.substr(0, prefix_.size()) == prefix_ && DecodePageKey(raw, parts);
}

MemCache::Value PageCache::Zeros(uint64_t length) {
  // The thread's all-zero page of the last length asked for: only read (a write copies it),
  // and kept so that a command on a page not stored yet does not allocate and clear one.
  thread_local MemCache::Value zeros;
  if (!zeros || zeros->size() != length) {
    zeros = std::make_shared<std::string>(length, '\0');
  }
  return zeros;
}

bool PageCache::MayHavePages(uint32_t f) {
  if (f >= stored_filters_) {
    return false;
  }
  if (meta_->num_filters <= kSkipScanMin || meta_->num_items >= meta_->num_filters) {
    // (A chain with an item per sub-filter or more, grown by inserts, has pages in most of
    // them: the scan would cost a Seek per sub-filter for nothing.)
    return true;
  }
  if (group_ != nullptr && group_->HasPagesOf(prefix_)) {
    return true;  // (the scan would not see the group's pages, which RocksDB has not got yet)
  }
  if (!scanned_) {
    scanned_ = true;
    stored_.assign(meta_->num_filters, false);
    std::unique_ptr<rocksdb::Iterator> it(
        engine_->db()->NewIterator(ReadOpts(), engine_->pages_cf()));
    uint32_t next = 0;
    while (next < stored_.size()) {
      it->Seek(EncodePageKey(prefix_, static_cast<uint16_t>(next), 0));
      if (!it->Valid()) {
        if (!it->status().ok()) {
          stored_.assign(stored_.size(), true);  // unknown: look everything up
        }
        break;
      }
      PageKeyParts parts;
      if (!OwnPage(it->key(), &parts) || parts.filter >= stored_.size()) {
        break;
      }
      stored_[parts.filter] = true;
      next = static_cast<uint32_t>(parts.filter) + 1;
    }
    for (const auto& [id, page] : pages_) {
      if (page.dirty && (id >> 32) < stored_.size()) {
        stored_[id >> 32] = true;
      }
    }
  }
  return f >= stored_.size() || stored_[f];
}

PageCache::Page* PageCache::Install(uint32_t f, uint64_t page, MemCache::Value value) {
  const uint64_t want = geo_.PageLength(page, Buckets(f));
  if (value && value->size() != want) {
    status_ = Status(Code::kCorruption, "corrupt page: filter " + std::to_string(f) + " page " +
                                            std::to_string(page) + " has " +
                                            std::to_string(value->size()) + " bytes, expected " +
                                            std::to_string(want));
    return nullptr;
  }
  auto [it, fresh] = pages_.try_emplace(Id(f, page));
  if (fresh) {  // (a page installed before, e.g. wanted twice, stays as it is)
    Page& p = it->second;
    p.in_group = in_place_ && value && group_->Owns(value.get());
    // A value only the in-memory cache holds besides this one (or nobody: a fill the cache
    // refused) is read by nobody but the holders of the key's stripes, and this command holds
    // them exclusively: its bytes can change in place instead of in a copy. (A borrowed value
    // counts no reference; one that another write group or command still holds is copied.)
    const long users = value.use_count();
    p.in_cache = in_place_ && !p.in_group && value && (users == 1 || users == 2);
    p.shared = value ? std::move(value) : Zeros(want);
  }
  return Remember(f, page, &it->second);
}

PageCache::Page* PageCache::Fetch(uint32_t f, uint64_t page) {
  if (page == 0 && f < first_pages_.size() && first_pages_[f] != nullptr) {
    return first_pages_[f];
  }
  auto it = pages_.find(Id(f, page));
  if (it != pages_.end()) {
    return &it->second;
  }
  if (!status_.ok()) {
    return nullptr;
  }
  if (!MayHavePages(f)) {
    return Install(f, page, nullptr);
  }
  std::string_view ck;
  uint64_t epoch = 0;
  if (mem_ != nullptr) {
    ck = CacheKeyOf(f, page);
    MemCache::Value cached;
    if (CacheGet(ck, &cached)) {
      return Install(f, page, std::move(cached));
    }
    epoch = mem_->Epoch(ck);
  }
  std::string value = EmptyPageBuffer();
  const std::string key =
      EncodePageKey(prefix_, static_cast<uint16_t>(f), static_cast<uint32_t>(page));
  auto s = engine_->db()->Get(PointReadOpts({&key, 1}), engine_->pages_cf(), key, &value);
  ++pages_loaded_;
  MemCache::Value stored;
  if (s.ok()) {
    stored = std::make_shared<std::string>(std::move(value));
  } else {
    RecyclePageBuffer(std::move(value));
  }
  if (mem_ != nullptr && (s.ok() || s.IsNotFound())) {
    mem_->Fill(ck, stored, epoch);
  }
  if (!s.ok() && !s.IsNotFound()) {
    status_ = Engine::FromRocks(s);
    return nullptr;
  }
  return Install(f, page, std::move(stored));
}

namespace {
constexpr size_t kKeepBuffers = 16384;  // pages of one lookup whose buffers a thread keeps
constexpr size_t kKeepSlices = 1024;    // RocksDB result slices a thread keeps (~2 MiB)
}  // namespace

void PageCache::Prefetch(std::span<const core::ItemHash> items, bool all) {
  PrefetchCandidates(items, all, /*primary_of_newest=*/false);
}

void PageCache::PrefetchForInsert(std::span<const core::ItemHash> items) {
  const uint32_t nf = meta_->num_filters;
  const uint64_t n = nf == 0 ? 0 : Buckets(nf - 1);
  if (n == 0) {
    Prefetch(items);  // (unusable metadata: core::Insert answers it)
    return;
  }
  PrefetchCandidates(items, /*all=*/false, /*primary_of_newest=*/true);
  if (!status_.ok()) {
    return;
  }
  const uint32_t f = nf - 1;
  std::vector<core::ItemHash> full;
  for (const auto& item : items) {
    const uint64_t b = core::PrimaryBucket(item.hash, n);
    if (!Loaded(f, geo_.PageOf(b))) {
      continue;  // (beyond the cap of one prefetch)
    }
    const uint8_t* bucket = Read(f, b);
    if (bucket == nullptr) {
      return;
    }
    if (std::memchr(bucket, 0, meta_->bucket_size) == nullptr) {
      full.push_back(item);
    }
  }
  if (!full.empty()) {
    PrefetchCandidates(full, /*all=*/false, /*primary_of_newest=*/false);
  }
}

void PageCache::PrefetchCandidates(std::span<const core::ItemHash> items, bool all,
                                   bool primary_of_newest) {
  // Writers cap the bytes of one prefetch at kMaxPrefetchPages whole pages (a small sub-filter's
  // page counts its length, at least a cache line's worth).
  const uint64_t cap = all ? UINT64_MAX : kMaxPrefetchPages * geo_.page_bytes;
  uint64_t spent = 0;
  // With more candidates than the filter has pages (a huge CF.MEXISTS of a small filter, or a
  // few items over a long chain of small sub-filters), most are repeats: each page is wanted
  // once (a bitmap over the filter's pages). Otherwise repeats are rare and cheap (found in
  // pages_ below).
  const uint32_t first_filter = primary_of_newest ? meta_->num_filters - 1 : 0;
  const size_t per_filter = primary_of_newest ? 1 : 2;
  const uint64_t candidates_total =
      static_cast<uint64_t>(items.size()) * per_filter * (meta_->num_filters - first_filter);
  std::vector<uint64_t> first_page;
  std::vector<bool> seen;
  if (candidates_total > 64) {
    uint64_t total = 0;
    for (uint32_t f = 0; f < meta_->num_filters; ++f) {
      first_page.push_back(total);
      const uint64_t n = Buckets(f);
      total += n == 0 ? 0 : geo_.PageOf(n - 1) + 1;
    }
    if (candidates_total > total) {
      seen.assign(total, false);
    }
  }
  // (the thread's, kept between commands: a command's candidates allocate nothing)
  thread_local std::vector<std::pair<uint32_t, uint64_t>> want;
  want.clear();
  // (pages_ sized once for the candidates instead of growing through every rehash)
  pages_.reserve(pages_.size() +
                 std::min<size_t>(items.size() * 2 * meta_->num_filters, kKeepBuffers));
  // Sub-filter by sub-filter: a sub-filter of one page (a long chain of small ones) wants that
  // page whatever the items are, without hashing each item into it.
  for (uint32_t f = first_filter; f < meta_->num_filters && spent < cap; ++f) {
    const uint64_t n = Buckets(f);
    if (n == 0 || !MayHavePages(f)) {
      continue;  // (pages of sub-filters without stored pages are zeros: Fetch makes them)
    }
    if (geo_.PageOf(n - 1) == 0) {
      if (!items.empty() && !Loaded(f, 0)) {
        want.emplace_back(f, 0);
        spent += std::max<uint64_t>(geo_.PageLength(0, n), 64);
      }
      continue;
    }
    for (const auto& item : items) {
      // (as core::Exists and core::Insert compute them)
      const uint64_t candidates[2] = {core::PrimaryBucket(item.hash, n),
                                      core::AltBucket(item.hash, item.fp, n)};
      for (size_t c = 0; c < per_filter; ++c) {
        uint64_t page = geo_.PageOf(candidates[c]);
        if (!seen.empty()) {
          const uint64_t bit = first_page[f] + page;
          if (seen[bit]) {
            continue;
          }
          seen[bit] = true;
        }
        if (!Loaded(f, page)) {
          want.emplace_back(f, page);
          spent += geo_.page_bytes;
        }
      }
      if (spent >= cap) {
        break;
      }
    }
  }
  if (mem_ != nullptr && !want.empty()) {
    if (want.size() <= 4) {
      // (a single-item command's two pages may be one: asked of the cache once, counted once)
      size_t distinct = 0;
      for (auto fp : want) {
        if (std::find(want.begin(), want.begin() + distinct, fp) == want.begin() + distinct) {
          want[distinct++] = fp;
        }
      }
      want.resize(distinct);
    }
    // Pages in the in-memory cache need no read at all (usually all of them: only the misses
    // are sorted for the MultiGet). They are looked up together, with one lock per cache shard
    // (a few pages' misses overlap: MemCache::GetSharedFew). A writer's misses may still be in
    // its write group (see CacheGet).
    thread_local std::string key_bytes;
    thread_local std::vector<std::string_view> views;
    thread_local std::vector<MemCache::Value> values;
    thread_local std::unique_ptr<bool[]> found;
    thread_local size_t found_size = 0;
    const size_t n = want.size();
    key_bytes.clear();
    for (auto [f, page] : want) {
      key_bytes.append(CacheKeyOf(f, page));
    }
    const size_t len = key_bytes.size() / n;  // (every key of this filter has the same length)
    views.resize(n);
    for (size_t i = 0; i < n; ++i) {
      views[i] = std::string_view(key_bytes.data() + i * len, len);
    }
    values.resize(n);
    if (found_size < n) {
      found = std::make_unique<bool[]>(n);
      found_size = n;
    }
    mem_->GetSharedFew(views, values.data(), found.get());
    size_t kept = 0;
    bool ok = true;
    for (size_t i = 0; i < n && ok; ++i) {
      auto [f, page] = want[i];
      if (!found[i]) {
        want[kept++] = want[i];  // (Load asks the write group)
      } else {
        ok = Install(f, page, std::move(values[i])) != nullptr;  // (once if wanted twice)
      }
    }
    values.clear();  // (the pages are referenced from pages_ only)
    if (n > kKeepBuffers) {
      // (a huge command's buffers are not kept by the thread)
      std::string().swap(key_bytes);
      std::vector<std::string_view>().swap(views);
      std::vector<MemCache::Value>().swap(values);
      found.reset();
      found_size = 0;
    }
    if (!ok) {
      return;
    }
    want.resize(kept);
  }
  if (!want.empty()) {
    Load(want);
  }
  if (want.capacity() > kKeepBuffers) {
    std::vector<std::pair<uint32_t, uint64_t>>().swap(want);
  }
}

void PageCache::Load(std::vector<std::pair<uint32_t, uint64_t>> want) {
  if (!status_.ok()) {
    return;
  }
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  size_t kept = 0;
  for (auto [f, page] : want) {
    if (Loaded(f, page)) {
      continue;
    }
    MemCache::Value grouped;
    if (group_ != nullptr && group_->Lookup(CacheKeyOf(f, page), &grouped)) {
      if (Install(f, page, std::move(grouped)) == nullptr) {
        return;
      }
      continue;
    }
    want[kept++] = {f, page};
  }
  want.resize(kept);
  if (want.empty()) {
    return;
  }
  std::vector<uint64_t> epochs;
  std::vector<std::string> cache_keys;
  std::vector<std::string> keys;
  keys.reserve(want.size());
  for (auto [f, page] : want) {
    keys.push_back(EncodePageKey(prefix_, static_cast<uint16_t>(f), static_cast<uint32_t>(page)));
    if (mem_ != nullptr) {
      cache_keys.push_back(PageCacheKey(keys.back()));
      epochs.push_back(mem_->Epoch(cache_keys.back()));
    }
  }
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  // Kept by the thread: a page RocksDB merges is built in its slice's own string, whose buffer
  // is then reused instead of allocated for every page of every read.
  thread_local std::vector<rocksdb::PinnableSlice> values;
  if (values.size() < keys.size()) {
    values.resize(keys.size());
  }
  struct Release {
    size_t n;
    ~Release() {
      for (size_t i = 0; i < n; ++i) {
        values[i].Reset();  // (unpins RocksDB's blocks; the slice's own buffer stays)
      }
      if (values.size() > kKeepSlices) {
        values.resize(kKeepSlices);  // (each keeps up to a page's buffer)
      }
    }
  } release{keys.size()};
  std::vector<rocksdb::Status> statuses(keys.size());
  engine_->db()->MultiGet(PointReadOpts(keys), engine_->pages_cf(), keys.size(), slices.data(),
                          values.data(), statuses.data(), /*sorted_input=*/true);
  pages_loaded_ += keys.size();
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [f, page] = want[i];
    MemCache::Value stored;
    if (statuses[i].ok()) {
      stored = std::make_shared<std::string>(PageBuffer(values[i].ToStringView()));
    }
    if (mem_ != nullptr && (statuses[i].ok() || statuses[i].IsNotFound())) {
      mem_->Fill(cache_keys[i], stored, epochs[i]);
    }
    if (!statuses[i].ok() && !statuses[i].IsNotFound()) {
      status_ = Engine::FromRocks(statuses[i]);
      return;
    }
    if (Install(f, page, std::move(stored)) == nullptr) {
      return;
    }
  }
}

const uint8_t* PageCache::Read(uint32_t f, uint64_t b) {
  Page* p = Fetch(f, geo_.PageOf(b));
  if (p == nullptr) {
    return nullptr;
  }
  uint64_t off = (b % geo_.buckets_per_page) * meta_->bucket_size;
  return reinterpret_cast<const uint8_t*>(p->data()) + off;
}

void PageCache::BuildMirror() {
  uint64_t bytes = 0;
  uint64_t count = 0;
  for (size_t f = 0; f < resident_.size(); ++f) {
    if (resident_[f] != nullptr && !first_pages_[f]->dirty) {
      bytes += first_pages_[f]->size();
      ++count;
    }
  }
  unmirrored_ = 0;
  mirrored_ = count;
  if (bytes > kMirrorMaxBytes) {
    return;  // (entries of an older mirror stay valid: it is kept)
  }
  std::vector<uint8_t> mirror(bytes);
  uint64_t at = 0;
  for (size_t f = 0; f < resident_.size(); ++f) {
    const Page* p = first_pages_[f];
    if (resident_[f] != nullptr && !p->dirty) {
      std::memcpy(mirror.data() + at, p->data(), p->size());
      resident_[f] = mirror.data() + at;
      at += p->size();
    }
  }
  mirror_.swap(mirror);  // (the old mirror, no longer pointed at, is freed here)
}

void PageCache::MarkDirty(Page* p) {
  if (!p->dirty) {
    p->dirty = true;
    if (p->in_place()) {
      // (changed in place: the group keeps the bytes from before it, or the ranges written)
    } else if (p->shared) {
      // Copy on write: the shared bytes become the "before" image.
      if (p->bytes.capacity() < p->shared->size()) {
        p->bytes = EmptyPageBuffer();
      }
      p->bytes.assign(*p->shared);
      p->before = std::move(p->shared);
      p->shared.reset();
    } else if (!p->whole) {
      p->before = std::make_shared<std::string>(PageBuffer(p->bytes));
    }
    // (a copy with its bytes from before: Write records the buckets it hands out)
    p->ranges_complete = group_ != nullptr && p->before != nullptr;
    p->copy_ranges_used = 0;
    ++dirty_pages_;
  }
}

uint8_t* PageCache::Write(uint32_t f, uint64_t b) {
  Page* p = Fetch(f, geo_.PageOf(b));
  if (p == nullptr) {
    return nullptr;
  }
  MarkDirty(p);
  if (geo_.PageOf(b) == 0) {
    SetResident(f, p);
  }
  uint64_t off = (b % geo_.buckets_per_page) * meta_->bucket_size;
  if (p->in_place()) {
    // The group's or the cache's value is a mutable string (made as std::string: see
    // AddDirtyTo and Load), which nobody else reads while this command holds the key.
    char* at = const_cast<char*>(p->shared->data()) + off;
    if (undo_.capacity() == 0) {
      undo_.swap(SpareUndo());  // (the thread's buffer from an earlier command, if any)
    }
    undo_.push_back(
        {at, undo_bytes_.size(), meta_->bucket_size, static_cast<uint32_t>(off), p->last_undo});
    p->last_undo = static_cast<uint32_t>(undo_.size() - 1);
    undo_bytes_.append(at, meta_->bucket_size);
    return reinterpret_cast<uint8_t*>(at);
  }
  if (p->ranges_complete) {
    RecordCopyRange(p, static_cast<uint32_t>(off));
  }
  return reinterpret_cast<uint8_t*>(p->bytes.data()) + off;
}

void PageCache::RecordCopyRange(Page* p, uint32_t offset) {
  for (uint8_t i = 0; i < p->copy_ranges_used; ++i) {
    if (p->copy_ranges[i].offset == offset) {
      return;  // (a bucket written again, e.g. by a kick-out chain)
    }
  }
  if (p->copy_ranges_used == Page::kCopyRanges) {
    p->ranges_complete = false;  // (the group compares the page instead)
    return;
  }
  p->copy_ranges[p->copy_ranges_used++] = {offset, meta_->bucket_size};
}

uint64_t PageCache::NextMaybeNonEmpty(uint32_t f, uint64_t b, uint64_t num_buckets) {
  uint64_t page = geo_.PageOf(b);
  if (f == scan_f_ && page == scan_page_) {
    return b;
  }
  if (Loaded(f, page)) {
    return b;  // cached (perhaps written by this command)
  }
  if (group_ != nullptr && group_->HasPagesOf(prefix_)) {
    // The iterator reads RocksDB, which has not got the pages of this filter that earlier
    // commands of the scope's write group changed: they are committed first.
    if (auto s = group_->Commit(); !s.ok()) {
      status_ = s;
      return b;  // (the caller's Read reports the error)
    }
    scan_it_.reset();
  }
  if (!scan_it_ || scan_f_ != f) {
    scan_it_.reset(engine_->db()->NewIterator(ReadOpts(), engine_->pages_cf()));
    scan_f_ = f;
  }
  auto key = EncodePageKey(prefix_, static_cast<uint16_t>(f), static_cast<uint32_t>(page));
  scan_it_->Seek(key);
  if (!scan_it_->Valid()) {
    if (!scan_it_->status().ok()) {
      status_ = Engine::FromRocks(scan_it_->status());
      return b;  // let the caller's Read report the error
    }
    return num_buckets;
  }
  PageKeyParts parts;
  if (!OwnPage(scan_it_->key(), &parts) || parts.filter != f) {
    return num_buckets;
  }
  scan_page_ = parts.page;
  uint64_t first = static_cast<uint64_t>(parts.page) * geo_.buckets_per_page;
  return std::min(std::max(first, b), num_buckets);
}

bool PageCache::Checkpoint() {
  if (snapshot_ != nullptr || !status_.ok()) {
    return status_.ok();
  }
  if (dirty_pages_ < kCheckpointDirtyPages && pages_.size() < kCheckpointCachedPages) {
    return true;
  }
  if (dirty_pages_ > 0) {
    if (group_ != nullptr) {
      // Earlier changes of the scope's write group reach RocksDB first.
      if (auto s = group_->Commit(); !s.ok()) {
        status_ = s;
        return false;
      }
    }
    rocksdb::WriteBatch batch;
    AddDirty(&batch);
    if (on_checkpoint_) {
      on_checkpoint_(&batch);
    }
    auto s = engine_->Write(&batch);
    if (!s.ok()) {
      status_ = s;
      return false;
    }
    Publish();
  }
  first_pages_.clear();
  resident_.clear();
  mirror_.clear();
  mirrored_ = unmirrored_ = 0;
  PageMap(&arena_).swap(pages_);  // (the old map is freed here, before the arena is reset)
  arena_.release();
  dirty_pages_ = 0;
  return true;
}

Status PageCache::ReadRange(uint32_t f, uint64_t offset, uint64_t length, std::string* out) {
  out->assign(length, '\0');
  if (length == 0) {
    return Status::Ok();
  }
  const uint64_t first = offset / geo_.page_bytes;
  const uint64_t last = (offset + length - 1) / geo_.page_bytes;
  auto start = EncodePageKey(prefix_, static_cast<uint16_t>(f), static_cast<uint32_t>(first));
  auto end = EncodePageKey(prefix_, static_cast<uint16_t>(f), static_cast<uint32_t>(last + 1));
  rocksdb::ReadOptions ro = ReadOpts();
  rocksdb::Slice upper(end);
  if (last + 1 <= UINT32_MAX) {
    ro.iterate_upper_bound = &upper;
  }
  std::unique_ptr<rocksdb::Iterator> it(engine_->db()->NewIterator(ro, engine_->pages_cf()));
  const uint64_t nb = Buckets(f);
  for (it->Seek(start); it->Valid(); it->Next()) {
    PageKeyParts parts;
    if (!OwnPage(it->key(), &parts) || parts.filter != f || parts.page > last) {
      break;
    }
    auto v = it->value();
    if (v.size() != geo_.PageLength(parts.page, nb)) {
      return Status(Code::kCorruption, "corrupt page: filter " + std::to_string(f) + " page " +
                                           std::to_string(parts.page) + " has " +
                                           std::to_string(v.size()) + " bytes");
    }
    const uint64_t page_start = static_cast<uint64_t>(parts.page) * geo_.page_bytes;
    const uint64_t from = std::max(page_start, offset);
    const uint64_t to = std::min(page_start + v.size(), offset + length);
    if (from < to) {
      std::memcpy(out->data() + (from - offset), v.data() + (from - page_start), to - from);
    }
  }
  if (!it->status().ok()) {
    return Engine::FromRocks(it->status());
  }
  // Pages this command already changed win over what is stored.
  for (uint64_t page = first; page <= last && !pages_.empty(); ++page) {
    auto pit = pages_.find(Id(f, page));
    if (pit == pages_.end() || !pit->second.dirty) {
      continue;
    }
    const uint64_t page_start = page * geo_.page_bytes;
    const uint64_t from = std::max(page_start, offset);
    const uint64_t to = std::min(page_start + pit->second.bytes.size(), offset + length);
    if (from < to) {
      std::memcpy(out->data() + (from - offset), pit->second.bytes.data() + (from - page_start),
                  to - from);
    }
  }
  return Status::Ok();
}

Status PageCache::WriteRange(uint32_t f, uint64_t offset, std::string_view data) {
  const uint64_t nb = Buckets(f);
  uint64_t pos = 0;
  while (pos < data.size()) {
    const uint64_t at = offset + pos;
    const uint64_t page = at / geo_.page_bytes;
    const uint64_t page_start = page * geo_.page_bytes;
    const uint64_t page_len = geo_.PageLength(page, nb);
    const uint64_t in_page = at - page_start;
    const uint64_t n = std::min<uint64_t>(page_len - in_page, data.size() - pos);
    Page* p = nullptr;
    if (in_page == 0 && n == page_len && pages_.find(Id(f, page)) == pages_.end()) {
      // The chunk covers the whole page: no need to read the old one.
      Page fresh;
      fresh.bytes.assign(page_len, '\0');
      fresh.whole = true;  // (owned bytes: MarkDirty keeps them and takes no "before")
      p = Remember(f, page, &pages_.emplace(Id(f, page), std::move(fresh)).first->second);
    } else {
      p = Fetch(f, page);
      if (p == nullptr) {
        return status_;
      }
    }
    MarkDirty(p);
    p->ranges_complete = false;  // (written here, not through Write)
    std::memcpy(p->bytes.data() + in_page, data.data() + pos, n);
    if (page == 0) {
      SetResident(f, p);
    }
    pos += n;
  }
  return Status::Ok();
}

void PageCache::AddDirty(rocksdb::WriteBatch* batch) {
  AddDirtyTo(batch, nullptr);
}

void PageCache::AddDirty(WriteGroup* group) {
  AddDirtyTo(nullptr, group);
}

void PageCache::AddDirtyTo(rocksdb::WriteBatch* batch, WriteGroup* group) {
  // In key order (a page key ends with the sub-filter and page numbers, big-endian) when
  // RocksDB's memtable inserts are cheaper so (Engine::ordered_writes).
  // (A single-item command changes one or two pages: those need no allocation here.)
  using Entry = std::pair<const uint64_t, Page>;
  Entry* few[4];
  std::vector<Entry*> many;
  std::span<Entry*> dirty;
  if (dirty_pages_ <= std::size(few)) {
    size_t n = 0;
    for (auto& entry : pages_) {
      if (entry.second.dirty && n < std::size(few)) {
        few[n++] = &entry;
      }
    }
    dirty = std::span<Entry*>(few, n);
  } else {
    many.reserve(dirty_pages_);
    for (auto& entry : pages_) {
      if (entry.second.dirty) {
        many.push_back(&entry);
      }
    }
    dirty = many;
  }
  if (engine_->ordered_writes()) {
    std::sort(dirty.begin(), dirty.end(),
              [](const auto* a, const auto* b) { return a->first < b->first; });
  }
  for (auto* entry : dirty) {
    const uint64_t id = entry->first;
    Page& page = entry->second;
    const uint32_t last_undo = std::exchange(page.last_undo, kNoUndo);  // (undo_ is emptied)
    if (page.in_cache && group != nullptr) {
      // Changed in place in the cache's value: the group takes it with the bytes written.
      group->AddPageInPlace(prefix_, CacheKeyOf(id >> 32, id & 0xffffffffULL), page.shared,
                            RangesWritten(last_undo));
      page.in_cache = false;
      page.in_group = true;  // (the group's now)
      if (scanned_ && (id >> 32) < stored_.size()) {
        stored_[id >> 32] = true;
      }
      page.dirty = false;
      continue;
    }
    if (page.in_group && group != nullptr) {
      // Changed in place: the group's value already has the new bytes, unless they are all
      // zeros now (not stored).
      const auto written = RangesWritten(last_undo);
      if (group->TakesRanges(page.shared.get())) {
        group->AddRanges(page.shared.get(), written);
      }
      if (AllZeroBytes(*page.shared, written)) {
        group->AddPage(prefix_, CacheKeyOf(id >> 32, id & 0xffffffffULL), nullptr, nullptr, false);
        page.in_group = false;
      } else if (scanned_ && (id >> 32) < stored_.size()) {
        stored_[id >> 32] = true;
      }
      page.dirty = false;
      continue;
    }
    if (page.in_place()) {
      // (Not expected: a page changed in place written outside the group, whole.)
      page.bytes.assign(*page.shared);
      page.shared.reset();
      page.before.reset();
      page.whole = true;
      page.in_group = false;
      page.in_cache = false;
    }
    const std::string* before = page.before.get();
    // A copy whose written buckets are known: only those bytes are looked at, and the group
    // writes only them.
    const bool ranged = group != nullptr && page.ranges_complete && !page.whole &&
                        before != nullptr && before->size() == page.bytes.size();
    page.ranges_complete = false;
    const std::span<const PageRange> written(page.copy_ranges, ranged ? page.copy_ranges_used : 0);
    const bool zero = ranged ? AllZeroBytes(page.bytes, written) : AllZeroBytes(page.bytes);
    const bool unchanged = !page.whole && before != nullptr &&
                           (zero     ? AllZeroBytes(*before)
                            : ranged ? SameBytes(*before, page.bytes, written)
                                     : *before == page.bytes);
    if (!unchanged) {
      // The page's cache key (the RocksDB key is the same without its first byte), in the
      // buffer CacheKeyOf reuses.
      const std::string_view cache_key = CacheKeyOf(id >> 32, id & 0xffffffffULL);
      MemCache::Value after;  // nullptr: all zeros, not stored
      if (!zero) {
        // The page becomes shared with the cache (no copy) and stays readable here. (A mutable
        // string: the write group's next commands may change it in place, see Owns.)
        after = std::make_shared<std::string>(std::move(page.bytes));
        page.bytes.clear();
        page.shared = after;
        if (scanned_ && (id >> 32) < stored_.size()) {
          stored_[id >> 32] = true;  // stored once committed (Checkpoint empties pages_)
        }
      }
      if (group != nullptr) {
        group->AddPage(prefix_, cache_key, page.before, after, page.whole,
                       ranged ? &written : nullptr);
      } else {
        (void)AddPageWrite(batch, engine_->pages_cf(), cache_key.substr(1), before, after.get(),
                           page.whole);
        if (mem_ != nullptr) {
          publish_.emplace_back(std::string(cache_key), std::move(after));
        }
      }
    }
    page.dirty = false;
    page.whole = false;
    page.before.reset();
    if ((id & 0xffffffffULL) == 0) {
      SetResident(static_cast<uint32_t>(id >> 32), &page);  // (its bytes may have moved)
    }
  }
  dirty_pages_ = 0;
  undo_.clear();  // (the changes made in place are the group's now)
  undo_bytes_.clear();
}

std::span<const PageRange> PageCache::RangesWritten(uint32_t last_undo) {
  // (Scratch kept by the thread: a PageCache lives for one command.)
  thread_local std::vector<PageRange> ranges;
  ranges.clear();
  for (uint32_t i = last_undo; i != kNoUndo; i = undo_[i].prev) {
    ranges.push_back({undo_[i].at_in_page, static_cast<uint32_t>(undo_[i].length)});
  }
  return ranges;
}

void PageCache::Publish() {
  if (mem_ != nullptr) {
    for (auto& [key, value] : publish_) {
      mem_->Put(key, std::move(value));
    }
  }
  publish_.clear();
}

}  // namespace cuckood::storage
