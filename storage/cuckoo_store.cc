// Cuckoo filter operations of Db: each command reads the metadata, runs core/ over a PageCache
// and commits dirty pages plus metadata in one WriteBatch. A command that fails writes nothing.
#include <rocksdb/write_batch.h>

#include <cstring>
#include <optional>
#include <span>

#include "core/chain_index.h"
#include "storage/db.h"
#include "storage/page_cache.h"
#include "storage/page_handles.h"
#include "storage/write_group.h"

namespace cuckood::storage {
namespace {

// The items' hashes into *out (replaced; its capacity is kept).
void HashAll(const std::vector<std::string_view>& items, std::vector<core::ItemHash>* out) {
  out->clear();
  out->reserve(items.size());
  for (auto item : items) {
    out->push_back(core::HashItem(item));
  }
}

constexpr size_t kKeepHashes = 65536;  // items of one insert whose hashes a thread's buffer keeps

const Status kWrongType(Code::kWrongType);
const Status kFilterExists(Code::kExists, Reason::kFilterExists);

// Serves core::Exists and core::Count the two candidate buckets of one item in every sub-filter,
// located beforehand (Db::CfLookup's cached path): no page map, no lookup per read.
class CandidateAccess final : public core::BucketAccess {
 public:
  struct Candidates {
    uint64_t bucket[2];
    const uint8_t* bytes[2];
  };
  explicit CandidateAccess(const Candidates* per_filter) : per_filter_(per_filter) {}
  const uint8_t* Read(uint32_t f, uint64_t b) override {
    const Candidates& c = per_filter_[f];
    return b == c.bucket[0] ? c.bytes[0] : b == c.bucket[1] ? c.bytes[1] : nullptr;
  }
  uint8_t* Write(uint32_t, uint64_t) override { return nullptr; }

 private:
  const Candidates* per_filter_;
};

// A lookup through the cached path asks for at most this many pages (larger ones, and long
// chains, take PageCache::Prefetch, which removes repeats and skips empty sub-filters).
constexpr size_t kCachedLookupMaxPages = 4096;
constexpr uint32_t kCachedLookupMaxFilters = 32;

// A cached lookup's candidate page once found: the cache's value (nullptr: known not stored),
// its bytes and length, and where it was found.
struct FoundPage {
  enum From : uint8_t { kNotFound, kCache, kHandles };
  const std::string* value = nullptr;
  const char* data = nullptr;
  uint64_t length = 0;
  From from = kNotFound;
  void SetFromCache(const std::string* v) {
    value = v;
    data = v != nullptr ? v->data() : nullptr;
    length = v != nullptr ? v->size() : 0;
    from = kCache;
  }
  void SetFromHandles(const PageHandles::Entry& e) {
    value = e.value;
    data = e.data;
    length = e.size;
    from = kHandles;
  }
};

// Writes the in-memory cache key of page `page` of sub-filter f ('p' | page prefix | filter |
// page, PageCacheKey) at key, which has room for 1 + prefix.size() + kPageKeySuffix bytes.
void WritePageCacheKey(char* key, std::string_view prefix, uint32_t f, uint64_t page) {
  key[0] = 'p';
  std::memcpy(key + 1, prefix.data(), prefix.size());
  EncodePageKeySuffix(key + 1 + prefix.size(), static_cast<uint16_t>(f),
                      static_cast<uint32_t>(page));
}

}  // namespace

std::string Db::PagePrefix(uint16_t ns, std::string_view key, const Metadata& meta) const {
  std::string out;
  PagePrefixTo(&out, ns, key, meta);
  return out;
}

void Db::PagePrefixTo(std::string* out, uint16_t ns, std::string_view key,
                      const Metadata& meta) const {
  std::string_view owner = meta.cuckoo.owner.empty() ? key : std::string_view(meta.cuckoo.owner);
  out->clear();
  AppendPagePrefix(out, ns, owner, meta.version);
}

Status Db::CommitFilter(const Scope& scope, PageCache* cache, const std::string& meta_key,
                        const Metadata& meta) {
  if (auto* group = scope.group) {
    if (cache != nullptr) {
      cache->AddDirty(group);
    }
    thread_local std::string cache_key;  // (MetaCacheKey, in the thread's buffer)
    cache_key.assign(1, 'm');
    cache_key.append(meta_key);
    group->AddMeta(cache_key, std::make_shared<std::string>(EncodeMetadata(meta)));
    return Status::Ok();
  }
  rocksdb::WriteBatch batch;
  if (cache != nullptr) {
    cache->AddDirty(&batch);
  }
  (void)batch.Put(engine_->metadata_cf(), meta_key, EncodeMetadata(meta));
  return Commit(scope, &batch, cache, {{meta_key, &meta}});
}

core::Limits Db::LimitsFor(const Metadata& meta, const CfSettings& settings) const {
  core::Limits limits;
  limits.max_filter_bytes = EffectiveMaxFilterBytes(
      settings.max_filter_bytes, meta.cuckoo.page_size, meta.cuckoo.filter.bucket_size);
  return limits;
}

std::shared_ptr<core::ChainIndex> Db::ChainIndexFor(std::string_view prefix,
                                                    const core::FilterMeta& filter,
                                                    PageCache* pages) {
  // (an index whose counts alone would not fit the budget would be built for every command)
  if (!core::ChainIndex::Suits(filter) ||
      filter.base_num_buckets * 256 * sizeof(uint32_t) * 2 > chain_indexes_.budget()) {
    return nullptr;
  }
  if (auto kept = chain_indexes_.Find(prefix)) {
    if (kept->Matches(filter) && kept->num_filters() == filter.num_filters) {
      return kept;
    }
  }
  const uint64_t drops = chain_indexes_.drops();
  auto built = std::make_shared<core::ChainIndex>();
  if (!built->Build(filter, *pages)) {
    return nullptr;  // (the caller's own reads report a storage error)
  }
  chain_indexes_.Keep(prefix, built, drops);
  return built;
}

StatusOr<Metadata> Db::NewFilter(uint64_t capacity, uint16_t bucket_size, uint16_t max_iterations,
                                 uint16_t expansion, const CfSettings& settings) {
  core::Limits limits;
  limits.max_filter_bytes =
      EffectiveMaxFilterBytes(settings.max_filter_bytes, settings.page_size, bucket_size);
  uint64_t buckets = core::BaseBuckets(capacity, bucket_size, settings.sizing, limits);
  if (buckets == 0) {
    return Status(Code::kInvalid, Reason::kCreateTooLarge);
  }
  auto version = engine_->NewVersion();
  if (!version.ok()) {
    return version.status();
  }
  Metadata meta;
  meta.type = KeyType::kCuckoo;
  meta.version = *version;
  auto& c = meta.cuckoo;
  c.filter.base_num_buckets = buckets;
  c.filter.bucket_size = bucket_size;
  c.filter.max_iterations = max_iterations;
  c.filter.expansion = core::NormaliseExpansion(expansion);
  c.filter.num_filters = 1;
  c.base_capacity = capacity;
  c.page_size = settings.page_size;
  return meta;
}

Status Db::CfReserve(const Scope& scope, uint16_t ns, std::string_view key, const ReserveArgs& args,
                     const CfSettings& settings) {
  auto m = Get(scope, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (m->has_value()) {
    return (*m)->type == KeyType::kCuckoo ? kFilterExists : kWrongType;
  }
  auto meta =
      NewFilter(args.capacity, args.bucket_size, args.max_iterations, args.expansion, settings);
  if (!meta.ok()) {
    return meta.status();
  }
  // Only metadata: pages are created when first written.
  return CommitFilter(scope, nullptr, EncodeMetaKey(ns, key), *meta);
}

StatusOr<InsertOutcome> Db::CfInsert(const Scope& scope, uint16_t ns, std::string_view key,
                                     const std::vector<std::string_view>& items,
                                     const InsertOptions& options, const CfSettings& settings) {
  const bool nx = options.nx;
  const uint64_t capacity = options.capacity;
  auto m = Get(scope, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  bool created = false;
  Metadata meta;
  if (!m->has_value()) {
    if (options.no_create) {
      return Status(Code::kNotFound, Reason::kFilterNotFound);
    }
    auto fresh =
        NewFilter(capacity == 0 ? settings.initial_capacity : capacity, settings.bucket_size,
                  settings.max_iterations, settings.expansion, settings);
    if (!fresh.ok()) {
      return fresh.status();
    }
    meta = std::move(*fresh);
    created = true;
  } else if ((*m)->type != KeyType::kCuckoo) {
    return kWrongType;
  } else {
    meta = std::move(**m);
  }
  // (the keys and hashes in the thread's buffers, kept between commands: a write of one item
  // allocates as little as it can)
  thread_local std::string meta_key_buf;
  meta_key_buf.clear();
  AppendMetaKey(&meta_key_buf, ns, key);
  const std::string& meta_key = meta_key_buf;
  InsertOutcome out;
  if (meta.cuckoo.filter.num_filters >= settings.max_expansions) {
    // RedisBloom refuses before looking at any item, but an auto-created key stays.
    out.max_expansions = true;
    if (created) {
      auto s = CommitFilter(scope, nullptr, meta_key, meta);
      if (!s.ok()) {
        return s;
      }
    }
    return out;
  }
  thread_local std::vector<core::ItemHash> hashes;
  struct TrimHashes {  // (a huge insert's buffer is not kept)
    ~TrimHashes() {
      if (hashes.capacity() > kKeepHashes) {
        std::vector<core::ItemHash>().swap(hashes);
      }
    }
  } trim_hashes;
  HashAll(items, &hashes);
  auto& filter = meta.cuckoo.filter;
  thread_local std::string prefix_buf;
  PagePrefixTo(&prefix_buf, ns, key, meta);
  const std::string& prefix = prefix_buf;
  PageCache cache(engine_, nullptr, &prefix, &filter, meta.cuckoo.page_size, &mem_, scope.group);
  cache.ChangeGroupPagesInPlace();
  cache.set_stripe_held(scope.stripes_held);
  cache.set_stored_filters(filter.num_filters);
  // A long chain's index names the sub-filter each item goes to: only its pages are read. (A
  // chain that grows long during the command gets one then.)
  std::shared_ptr<core::ChainIndex> index;
  std::optional<core::IndexedAccess> indexed;
  core::BucketAccess* access = &cache;
  bool may_index = true;
  auto use_index = [&] {
    if (may_index && !index && core::ChainIndex::Suits(filter)) {
      may_index = false;
      index = ChainIndexFor(prefix, filter, &cache);
      if (index) {
        indexed.emplace(cache, *index);
        access = &*indexed;
      }
    }
  };
  use_index();
  if (!index) {
    if (nx) {
      cache.Prefetch(hashes);  // (the item is looked for first, in every candidate bucket)
    } else {
      cache.PrefetchForInsert(hashes);
    }
  }
  // Any failure from here on leaves the kept index behind the bytes: it is dropped.
  auto drop_index = [&] {
    if (index) {
      chain_indexes_.Drop(prefix);
      indexed.reset();
      index.reset();
      access = &cache;
    }
  };
  const core::Limits limits = LimitsFor(meta, settings);
  out.results.reserve(hashes.size());
  bool changed = created;
  for (const auto& h : hashes) {
    if (options.separate_calls && filter.num_filters >= settings.max_expansions) {
      break;  // (this call and the later ones are refused; the earlier ones stay)
    }
    use_index();
    const bool with_index = indexed.has_value();
    auto r = core::Insert(filter, *access, h, nx, limits);
    if (with_index && !indexed->Settle(filter)) {
      drop_index();
    }
    if (r == core::InsertResult::kIoError && with_index && cache.status().ok()) {
      // The index disagreed with the bytes (it named a sub-filter without room): nothing was
      // stored; the item goes in by a scan, and the index is built again by the next command.
      drop_index();
      r = core::Insert(filter, cache, h, nx, limits);
    }
    if (r == core::InsertResult::kIoError) {
      drop_index();
      return cache.status();
    }
    changed |= r == core::InsertResult::kInserted;
    out.results.push_back(r);
  }
  pages_loaded_ += cache.pages_loaded();
  if (!changed) {
    return out;
  }
  meta.size = filter.num_items;
  auto s = CommitFilter(scope, &cache, meta_key, meta);
  if (!s.ok()) {
    drop_index();
    return s;
  }
  return out;
}

bool Db::LookupCached(const MetaView& view, std::span<const core::ItemHash> hashes, bool count,
                      PageCache* fallback, std::vector<uint64_t>* out) {
  const core::FilterMeta& filter = view.meta.cuckoo.filter;
  const uint32_t nf = filter.num_filters;
  const size_t wanted = hashes.size() * 2 * nf;
  if (nf == 0 || nf > kCachedLookupMaxFilters || wanted > kCachedLookupMaxPages) {
    return false;
  }
  const PageGeometry geo(view.meta.cuckoo.page_size, filter.bucket_size);
  thread_local std::vector<uint64_t> buckets_of;               // per sub-filter
  thread_local std::vector<CandidateAccess::Candidates> cand;  // per item and sub-filter
  thread_local std::vector<FoundPage> pages;                   // per candidate page
  thread_local std::vector<uint32_t> asked;  // the candidates asked of the in-memory cache
  thread_local std::string key_bytes;
  thread_local std::vector<std::string_view> views;
  thread_local std::vector<MemCache::Value> values;
  thread_local std::vector<MemCache::Stamp> stamps;
  thread_local std::unique_ptr<bool[]> found;
  thread_local size_t found_size = 0;
  thread_local std::string zeros;
  buckets_of.resize(nf);
  for (uint32_t f = 0; f < nf; ++f) {
    buckets_of[f] = core::SubFilterBuckets(filter, f);
    if (buckets_of[f] == 0) {
      return false;
    }
  }
  // Candidate j is bucket j % 2 of item j / (2 nf) in sub-filter (j / 2) % nf.
  cand.resize(hashes.size() * nf);
  for (size_t i = 0; i < hashes.size(); ++i) {
    for (uint32_t f = 0; f < nf; ++f) {
      auto& c = cand[i * nf + f];
      const uint64_t n = buckets_of[f];
      c.bucket[0] = core::PrimaryBucket(hashes[i].hash, n);
      c.bucket[1] = core::AltBucket(hashes[i].hash, hashes[i].fp, n);
    }
  }
  auto page_at = [&](size_t j) { return geo.PageOf(cand[j / 2].bucket[j % 2]); };
  auto filter_at = [&](size_t j) { return static_cast<uint32_t>((j / 2) % nf); };
  // The pages this thread found before (PageHandles), then the others from the in-memory cache.
  PageHandles* handles = view.id != 0 && MemCache::Borrowing()
                             ? &PageHandles::ForThread(page_handle_entries_)
                             : nullptr;
  pages.assign(wanted, FoundPage{});
  asked.clear();
  if (handles != nullptr) {
    for (size_t j = 0; j < wanted; ++j) {
      handles->Prefetch(view.id, filter_at(j), page_at(j));
    }
    uint64_t kept = 0;
    for (size_t j = 0; j < wanted; ++j) {
      if (const auto* e = handles->Find(view.id, filter_at(j), page_at(j))) {
        pages[j].SetFromHandles(*e);
        ++kept;
      } else {
        asked.push_back(static_cast<uint32_t>(j));
      }
    }
    if (kept > 0) {
      mem_.CountKeptHits(kept);
    }
  } else {
    asked.resize(wanted);
    for (size_t j = 0; j < wanted; ++j) {
      asked[j] = static_cast<uint32_t>(j);
    }
  }
  const size_t n_asked = asked.size();
  if (n_asked > 0) {
    // The cache key of every page asked for: 'p' | page prefix | filter | page (PageCacheKey).
    const size_t key_len = 1 + view.page_prefix.size() + kPageKeySuffix;
    key_bytes.resize(n_asked * key_len);
    views.resize(n_asked);
    for (size_t a = 0; a < n_asked; ++a) {
      const size_t j = asked[a];
      WritePageCacheKey(key_bytes.data() + a * key_len, view.page_prefix, filter_at(j), page_at(j));
    }
    for (size_t a = 0; a < n_asked; ++a) {
      views[a] = std::string_view(key_bytes.data() + a * key_len, key_len);
    }
    values.resize(n_asked);
    stamps.resize(n_asked);
    if (found_size < n_asked) {
      found = std::make_unique<bool[]>(n_asked);
      found_size = n_asked;
    }
    MemCache::Stamp* want_stamps = handles != nullptr ? stamps.data() : nullptr;
    if (n_asked <= MemCache::kFewKeys) {
      mem_.GetSharedFew(views, values.data(), found.get(), want_stamps);
    } else {
      mem_.GetSharedMany(views, values.data(), found.get(), want_stamps);
    }
    for (size_t a = 0; a < n_asked; ++a) {
      const size_t j = asked[a];
      if (!found[a]) {
        continue;
      }
      pages[j].SetFromCache(values[a].get());
      if (handles != nullptr) {
        handles->Remember(view.id, filter_at(j), page_at(j), values[a].get(), stamps[a]);
      }
    }
  }
  // Never-stored pages read as zeros: one buffer of a full page serves them all (sized before
  // any pointer into it is taken).
  if (zeros.size() < geo.page_bytes) {
    zeros.assign(geo.page_bytes, '\0');
  }
  // Every page must be cached with its expected length; otherwise the pages found are handed to
  // the page cache, which reads the rest (and reports a page of the wrong length).
  bool all = true;
  size_t k = 0;
  for (size_t i = 0; i < hashes.size() && all; ++i) {
    for (uint32_t f = 0; f < nf && all; ++f) {
      auto& c = cand[i * nf + f];
      for (int side = 0; side < 2; ++side, ++k) {
        const uint64_t page = geo.PageOf(c.bucket[side]);
        const uint64_t length = geo.PageLength(page, buckets_of[f]);
        const FoundPage& p = pages[k];
        if (p.from == FoundPage::kNotFound || (p.value != nullptr && p.length != length)) {
          all = false;
          break;
        }
        const uint64_t off = (c.bucket[side] % geo.buckets_per_page) * filter.bucket_size;
        if (p.value != nullptr) {
          c.bytes[side] = reinterpret_cast<const uint8_t*>(p.data) + off;
        } else {  // known not stored: zeros
          c.bytes[side] = reinterpret_cast<const uint8_t*>(zeros.data()) + off;
        }
        __builtin_prefetch(c.bytes[side]);
      }
    }
  }
  auto release = [&] {
    values.clear();  // (borrowed: valid while the caller's section is open)
    if (wanted > kCachedLookupMaxPages / 4) {
      // (a large lookup's buffers are not kept by the thread)
      std::string().swap(key_bytes);
      std::vector<std::string_view>().swap(views);
      std::vector<MemCache::Value>().swap(values);
      std::vector<MemCache::Stamp>().swap(stamps);
      std::vector<CandidateAccess::Candidates>().swap(cand);
      std::vector<FoundPage>().swap(pages);
      std::vector<uint32_t>().swap(asked);
    }
  };
  if (!all) {
    // The page cache takes the pages found and reads the others, so that no page is asked of
    // the in-memory cache twice (its hit and miss counts are INFO's). (The values are borrowed,
    // as the cache hands them out in the caller's section.)
    std::vector<std::pair<uint32_t, uint64_t>> missing;
    for (size_t a = 0; a < n_asked; ++a) {
      const size_t j = asked[a];
      if (found[a]) {
        fallback->Adopt(filter_at(j), page_at(j), std::move(values[a]));
      } else {
        missing.emplace_back(filter_at(j), page_at(j));
      }
    }
    for (size_t j = 0; j < wanted; ++j) {
      if (pages[j].from == FoundPage::kHandles) {  // (borrowed, as the cache lends its values)
        const std::string* v = pages[j].value;
        fallback->Adopt(filter_at(j), page_at(j),
                        v != nullptr ? MemCache::Value(MemCache::Value(), v) : MemCache::Value());
      }
    }
    release();
    fallback->Load(std::move(missing));
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < hashes.size() && ok; ++i) {
    CandidateAccess access(&cand[i * nf]);
    bool io_error = false;
    (*out)[i] = count ? core::Count(filter, access, hashes[i], &io_error)
                      : (core::Exists(filter, access, hashes[i], &io_error) ? 1 : 0);
    ok = !io_error;
  }
  release();
  return ok;  // (an unusable filter: the page cache's path reports it)
}

StatusOr<std::vector<uint64_t>> Db::CfLookup(const Scope& scope, uint16_t ns, std::string_view key,
                                             const std::vector<std::string_view>& items,
                                             bool count) {
  std::vector<uint64_t> out(items.size(), 0);
  // The caller holds the key's stripe shared, so no writer of this key runs meanwhile: the
  // metadata and pages (from the in-memory cache, the rest in one MultiGet) are one state. A
  // caller that could not take the stripe reads one RocksDB snapshot instead.
  std::optional<SnapshotHolder> snap;
  rocksdb::ReadOptions ro;
  if (scope.snapshot_reads()) {
    snap.emplace(engine_);
    ro.snapshot = snap->get();
  }
  auto m = LookupMeta(scope, ro, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (*m == nullptr || (*m)->meta.type != KeyType::kCuckoo) {
    return out;  // RedisBloom answers 0 for a missing key and for another type alike
  }
  const Metadata& meta = (*m)->meta;
  std::vector<core::ItemHash> hashes;
  HashAll(items, &hashes);
  // The pages are borrowed from the in-memory cache for the lookup (MemCache::ReadSection;
  // opened after LookupMeta, whose record is kept by the thread). The section closes after the
  // page cache that holds them.
  MemCache::ReadSection section;
  PageCache cache(engine_, ro.snapshot, &(*m)->page_prefix, &meta.cuckoo.filter,
                  meta.cuckoo.page_size, &mem_, scope.group);
  cache.set_stripe_held(scope.stripes_held);
  if (ro.snapshot == nullptr && LookupCached(**m, hashes, count, &cache, &out)) {
    return out;
  }
  if (ro.snapshot == nullptr) {
    // A long chain's index answers without reading a page.
    const core::FilterMeta& filter = meta.cuckoo.filter;
    auto index = ChainIndexFor((*m)->page_prefix, filter, &cache);
    if (index && index->num_filters() == filter.num_filters) {
      const uint64_t n = filter.base_num_buckets;
      for (size_t i = 0; i < hashes.size(); ++i) {
        const uint64_t b0 = core::PrimaryBucket(hashes[i].hash, n);
        const uint64_t b1 = core::AltBucket(hashes[i].hash, hashes[i].fp, n);
        out[i] = count ? index->Count(b0, b1, hashes[i].fp)
                       : (index->Contains(b0, b1, hashes[i].fp) ? 1 : 0);
      }
      pages_loaded_ += cache.pages_loaded();
      return out;
    }
  }
  cache.Prefetch(hashes, /*all=*/true);
  for (size_t i = 0; i < hashes.size(); ++i) {
    bool io_error = false;
    out[i] = count ? core::Count(meta.cuckoo.filter, cache, hashes[i], &io_error)
                   : (core::Exists(meta.cuckoo.filter, cache, hashes[i], &io_error) ? 1 : 0);
    if (io_error) {
      return cache.status();
    }
  }
  pages_loaded_ += cache.pages_loaded();
  return out;
}

void Db::CfLookupKeys(const Scope& scope, uint16_t ns, std::span<const std::string_view> keys,
                      std::span<const std::string_view> items, bool count,
                      std::vector<StatusOr<uint64_t>>* out) {
  const size_t n = keys.size();
  out->clear();
  out->reserve(n);
  auto one = [&](size_t i) -> StatusOr<uint64_t> {
    auto r = CfLookup(scope, ns, keys[i], {items[i]}, count);
    if (!r.ok()) {
      return r.status();
    }
    return (*r)[0];
  };
  if (scope.snapshot_reads() || !scope.stripes_held) {
    for (size_t i = 0; i < n; ++i) {
      out->push_back(one(i));
    }
    return;
  }
  // Each call's metadata (this thread's decoded copies, mostly), then the candidate pages of
  // every call in one GetSharedMany; a call whose filter does not suit (long chains, pages not
  // cached) is answered by CfLookup.
  const rocksdb::ReadOptions ro;
  std::vector<std::shared_ptr<const MetaView>> views(n);
  std::vector<uint8_t> cached(n, 0);  // answered from the pages asked for together
  std::vector<core::ItemHash> hashes(n);
  std::vector<size_t> first(n + 1, 0);  // call i's candidates: [first[i], first[i + 1])
  size_t wanted = 0;
  for (size_t i = 0; i < n; ++i) {
    out->push_back(uint64_t{0});
    first[i] = wanted;
    auto m = LookupMeta(scope, ro, ns, keys[i]);
    if (!m.ok()) {
      (*out)[i] = m.status();
      continue;
    }
    if (*m == nullptr || (*m)->meta.type != KeyType::kCuckoo) {
      continue;  // (0, as CfLookup answers a missing key or another type)
    }
    const core::FilterMeta& filter = (*m)->meta.cuckoo.filter;
    const uint32_t nf = filter.num_filters;
    if (nf == 0 || nf > kCachedLookupMaxFilters || wanted + 2 * nf > kCachedLookupMaxPages) {
      cached[i] = 2;  // (CfLookup answers it)
      continue;
    }
    views[i] = std::move(*m);
    hashes[i] = core::HashItem(items[i]);
    cached[i] = 1;
    wanted += 2 * nf;
  }
  first[n] = wanted;
  MemCache::ReadSection section;
  // (the per-candidate buffers are the thread's, kept from call to call: a pipeline's lookups
  // made a dozen allocations per batch)
  thread_local std::vector<CandidateAccess::Candidates> cand;
  cand.resize(wanted / 2);
  // Never-stored pages read as zeros: one buffer of the largest page serves them all (sized
  // here, before any pointer into it is taken).
  thread_local std::string zeros;
  thread_local std::vector<uint32_t> filter_of;  // per candidate
  thread_local std::vector<uint64_t> page_of;
  thread_local std::vector<uint32_t> call_of;
  filter_of.resize(wanted);
  page_of.resize(wanted);
  call_of.resize(wanted);
  for (size_t i = 0; i < n; ++i) {
    if (cached[i] != 1) {
      continue;
    }
    const MetaView& view = *views[i];
    const core::FilterMeta& filter = view.meta.cuckoo.filter;
    const PageGeometry geo(view.meta.cuckoo.page_size, filter.bucket_size);
    if (zeros.size() < geo.page_bytes) {
      zeros.assign(geo.page_bytes, '\0');
    }
    size_t k = first[i];
    for (uint32_t f = 0; f < filter.num_filters; ++f) {
      const uint64_t buckets = core::SubFilterBuckets(filter, f);
      auto& c = cand[k / 2];
      c.bucket[0] = buckets == 0 ? 0 : core::PrimaryBucket(hashes[i].hash, buckets);
      c.bucket[1] = buckets == 0 ? 0 : core::AltBucket(hashes[i].hash, hashes[i].fp, buckets);
      for (uint64_t b : c.bucket) {
        filter_of[k] = f;
        page_of[k] = geo.PageOf(b);
        call_of[k] = static_cast<uint32_t>(i);
        ++k;
      }
      if (buckets == 0) {
        cached[i] = 2;  // (an unusable filter: CfLookup reports it)
      }
    }
  }
  // The pages this thread found before (PageHandles), then the others from the in-memory cache.
  thread_local std::vector<FoundPage> pages;  // per candidate page
  thread_local std::vector<uint32_t> asked;
  pages.assign(wanted, FoundPage{});
  asked.clear();
  PageHandles* handles =
      MemCache::Borrowing() ? &PageHandles::ForThread(page_handle_entries_) : nullptr;
  if (handles != nullptr) {
    for (size_t j = 0; j < wanted; ++j) {
      if (cached[call_of[j]] == 1 && views[call_of[j]]->id != 0) {
        handles->Prefetch(views[call_of[j]]->id, filter_of[j], page_of[j]);
      }
    }
  }
  uint64_t kept = 0;
  for (size_t j = 0; j < wanted; ++j) {
    if (cached[call_of[j]] != 1) {
      continue;
    }
    const uint64_t id = views[call_of[j]]->id;
    if (handles != nullptr && id != 0) {
      if (const auto* e = handles->Find(id, filter_of[j], page_of[j])) {
        pages[j].SetFromHandles(*e);
        ++kept;
        continue;
      }
    }
    asked.push_back(static_cast<uint32_t>(j));
  }
  if (kept > 0) {
    mem_.CountKeptHits(kept);
  }
  thread_local std::string key_bytes;
  thread_local std::vector<size_t> key_at;
  key_bytes.clear();
  key_at.assign(asked.size() + 1, 0);
  for (size_t a = 0; a < asked.size(); ++a) {
    const size_t j = asked[a];
    const MetaView& view = *views[call_of[j]];
    const size_t at = key_bytes.size();
    key_bytes.resize(at + 1 + view.page_prefix.size() + kPageKeySuffix);
    WritePageCacheKey(key_bytes.data() + at, view.page_prefix, filter_of[j], page_of[j]);
    key_at[a + 1] = key_bytes.size();
  }
  thread_local std::vector<std::string_view> page_keys;
  page_keys.resize(asked.size());
  for (size_t a = 0; a < asked.size(); ++a) {
    page_keys[a] = std::string_view(key_bytes).substr(key_at[a], key_at[a + 1] - key_at[a]);
  }
  thread_local std::vector<MemCache::Value> values;
  thread_local std::vector<MemCache::Stamp> stamps;
  thread_local std::unique_ptr<bool[]> found;
  thread_local size_t found_size = 0;
  values.resize(asked.size());
  stamps.resize(asked.size());
  if (found_size < std::max<size_t>(asked.size(), 1)) {
    found_size = std::max<size_t>(asked.size(), 1);
    found = std::make_unique<bool[]>(found_size);
  }
  if (!asked.empty()) {
    mem_.GetSharedMany(page_keys, values.data(), found.get(),
                       handles != nullptr ? stamps.data() : nullptr);
  }
  for (size_t a = 0; a < asked.size(); ++a) {
    if (!found[a]) {
      continue;
    }
    const size_t j = asked[a];
    pages[j].SetFromCache(values[a].get());
    if (handles != nullptr) {
      handles->Remember(views[call_of[j]]->id, filter_of[j], page_of[j], values[a].get(),
                        stamps[a]);
    }
  }
  // Every call's candidate buckets, each asked for as soon as its page is known (their cache
  // misses overlap), then the answers.
  for (size_t i = 0; i < n; ++i) {
    if (cached[i] != 1) {
      continue;
    }
    const MetaView& view = *views[i];
    const core::FilterMeta& filter = view.meta.cuckoo.filter;
    const PageGeometry geo(view.meta.cuckoo.page_size, filter.bucket_size);
    bool all = true;
    size_t k = first[i];
    for (uint32_t f = 0; f < filter.num_filters && all; ++f) {
      auto& c = cand[k / 2];
      const uint64_t buckets = core::SubFilterBuckets(filter, f);
      for (int side = 0; side < 2; ++side, ++k) {
        const uint64_t page = geo.PageOf(c.bucket[side]);
        const FoundPage& p = pages[k];
        if (p.from == FoundPage::kNotFound ||
            (p.value != nullptr && p.length != geo.PageLength(page, buckets))) {
          all = false;
          break;
        }
        const uint64_t off = (c.bucket[side] % geo.buckets_per_page) * filter.bucket_size;
        c.bytes[side] =
            reinterpret_cast<const uint8_t*>(p.value != nullptr ? p.data : zeros.data()) + off;
        __builtin_prefetch(c.bytes[side]);
      }
    }
    if (!all) {
      cached[i] = 2;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (cached[i] != 1) {
      continue;
    }
    CandidateAccess access(&cand[first[i] / 2]);
    bool io_error = false;
    const core::FilterMeta& filter = views[i]->meta.cuckoo.filter;
    const uint64_t r = count ? core::Count(filter, access, hashes[i], &io_error)
                             : (core::Exists(filter, access, hashes[i], &io_error) ? 1 : 0);
    if (io_error) {
      cached[i] = 2;
    } else {
      (*out)[i] = r;
    }
  }
  values.clear();  // (borrowed: before the section closes)
  for (size_t i = 0; i < n; ++i) {
    if (cached[i] == 2) {
      (*out)[i] = one(i);
    }
  }
}

StatusOr<bool> Db::CfDelete(const Scope& scope, uint16_t ns, std::string_view key,
                            std::string_view item, const CfSettings&) {
  auto m = Get(scope, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value() || (*m)->type != KeyType::kCuckoo) {
    return Status(Code::kNotFound, Reason::kDelFilterNotFound);
  }
  Metadata meta = std::move(**m);
  auto& filter = meta.cuckoo.filter;
  const std::string meta_key = EncodeMetaKey(ns, key);
  const std::string prefix = PagePrefix(ns, key, meta);
  PageCache cache(engine_, nullptr, &prefix, &filter, meta.cuckoo.page_size, &mem_, scope.group);
  // A kept chain index follows the delete (not one built for it: the delete scans the chain).
  std::shared_ptr<core::ChainIndex> index;
  if (core::ChainIndex::Suits(filter) && chain_indexes_.budget() != 0) {
    index = chain_indexes_.Find(prefix);
    if (index && !index->Matches(filter)) {
      chain_indexes_.Drop(prefix);
      index.reset();
    }
  }
  std::optional<core::IndexedAccess> indexed;
  if (index) {
    indexed.emplace(cache, *index);
  }
  cache.set_on_checkpoint([&](rocksdb::WriteBatch* batch) {
    meta.size = filter.num_items;
    auto encoded = EncodeMetadata(meta);
    (void)batch->Put(engine_->metadata_cf(), meta_key, encoded);
    cache.AddPublish(MetaCacheKey(meta_key), std::move(encoded));
  });
  auto h = core::HashItem(item);
  cache.Prefetch(std::span<const core::ItemHash>(&h, 1));
  auto r = indexed ? core::Delete(filter, *indexed, h) : core::Delete(filter, cache, h);
  pages_loaded_ += cache.pages_loaded();
  // (a delete that compacted the chain, or failed, leaves the index behind)
  if (indexed && (r == core::DeleteResult::kIoError || !indexed->Settle(filter))) {
    chain_indexes_.Drop(prefix);
    index.reset();
  }
  if (r == core::DeleteResult::kIoError) {
    return cache.status();
  }
  if (r == core::DeleteResult::kNotFound) {
    return false;
  }
  meta.size = filter.num_items;
  auto s = CommitFilter(scope, &cache, meta_key, meta);
  if (!s.ok()) {
    if (index) {
      chain_indexes_.Drop(prefix);
    }
    return s;
  }
  return true;
}

Status Db::CfCompact(const Scope& scope, uint16_t ns, std::string_view key, const CfSettings&) {
  auto m = Get(scope, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value() || (*m)->type != KeyType::kCuckoo) {
    return Status(Code::kNotFound, Reason::kCompactFilterNotFound);
  }
  Metadata meta = std::move(**m);
  auto& filter = meta.cuckoo.filter;
  const std::string meta_key = EncodeMetaKey(ns, key);
  const std::string prefix = PagePrefix(ns, key, meta);
  chain_indexes_.Drop(prefix);  // (moves fingerprints and drops sub-filters: built again later)
  PageCache cache(engine_, nullptr, &prefix, &filter, meta.cuckoo.page_size, &mem_, scope.group);
  cache.set_on_checkpoint([&](rocksdb::WriteBatch* batch) {
    auto encoded = EncodeMetadata(meta);
    (void)batch->Put(engine_->metadata_cf(), meta_key, encoded);
    cache.AddPublish(MetaCacheKey(meta_key), std::move(encoded));
  });
  bool ok = core::Compact(filter, cache, /*stop_on_stuck=*/false);
  pages_loaded_ += cache.pages_loaded();
  if (!ok) {
    return cache.status();
  }
  rocksdb::WriteBatch batch;
  cache.AddDirty(&batch);
  (void)batch.Put(engine_->metadata_cf(), meta_key, EncodeMetadata(meta));
  return Commit(scope, &batch, &cache, {{meta_key, &meta}});
}

StatusOr<Metadata> Db::CfInfo(const Scope& scope, uint16_t ns, std::string_view key) {
  auto m = Get(scope, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value()) {
    return Status(Code::kNotFound, Reason::kFilterNotFound);
  }
  if ((*m)->type != KeyType::kCuckoo) {
    return kWrongType;
  }
  return std::move(**m);
}

StatusOr<ScanDumpChunk> Db::CfScanDump(const Scope& scope, uint16_t ns, std::string_view key,
                                       int64_t iter) {
  SnapshotHolder snap(engine_);
  rocksdb::ReadOptions ro;
  ro.snapshot = snap.get();
  auto m = GetWith(scope, ro, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value()) {
    return Status(Code::kNotFound, Reason::kFilterNotFound);
  }
  if ((*m)->type != KeyType::kCuckoo) {
    return kWrongType;
  }
  const Metadata& meta = **m;
  ScanDumpChunk out;
  if (meta.cuckoo.filter.num_items == 0) {
    return out;  // RedisBloom cannot dump an empty filter: [0, null] for any iterator
  }
  if (iter == 0) {
    out.next = 1;
    out.data = core::EncodeHeader(meta.cuckoo.filter);
    return out;
  }
  auto range = core::DumpRange(meta.cuckoo.filter, iter);
  if (!range) {
    return out;
  }
  // (&mem_: not read through with a snapshot, but a pass over the whole filter then stays out
  // of RocksDB's block cache too)
  PageCache cache(engine_, snap.get(), PagePrefix(ns, key, meta), &meta.cuckoo.filter,
                  meta.cuckoo.page_size, &mem_);
  std::string bytes;
  auto s = cache.ReadRange(range->filter, range->offset, range->length, &bytes);
  if (!s.ok()) {
    return s;
  }
  out.next = range->next_iter;
  out.data = std::move(bytes);
  return out;
}

Status Db::CfLoadChunk(const Scope& scope, uint16_t ns, std::string_view key, int64_t iter,
                       std::string_view data, const CfSettings& settings) {
  auto m = Get(scope, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  const std::string meta_key = EncodeMetaKey(ns, key);
  if (iter == 1) {
    if (m->has_value()) {
      return (*m)->type == KeyType::kCuckoo ? kFilterExists : kWrongType;
    }
    if (data.size() != core::kHeaderSize) {
      return Status(Code::kInvalid, Reason::kBadHeader);
    }
    const uint16_t bucket_size = static_cast<uint16_t>(static_cast<uint8_t>(data[32]) |
                                                       (static_cast<uint8_t>(data[33]) << 8));
    core::Limits limits;
    limits.max_filter_bytes =
        EffectiveMaxFilterBytes(settings.max_filter_bytes, settings.page_size, bucket_size);
    auto filter = core::DecodeHeader(data, limits);
    if (!filter) {
      return Status(Code::kInvalid, Reason::kCreateFailed);
    }
    auto version = engine_->NewVersion();
    if (!version.ok()) {
      return version.status();
    }
    Metadata meta;
    meta.type = KeyType::kCuckoo;
    meta.version = *version;
    meta.size = filter->num_items;
    meta.cuckoo.filter = *filter;
    meta.cuckoo.base_capacity = 0;
    meta.cuckoo.page_size = settings.page_size;
    rocksdb::WriteBatch batch;
    (void)batch.Put(engine_->metadata_cf(), meta_key, EncodeMetadata(meta));
    return Commit(scope, &batch, nullptr, {{meta_key, &meta}});
  }
  if (!m->has_value()) {
    return Status(Code::kNotFound, Reason::kFilterNotFound);
  }
  if ((*m)->type != KeyType::kCuckoo) {
    return kWrongType;
  }
  const Metadata& meta = **m;
  auto range = core::LoadRange(meta.cuckoo.filter, iter, data.size());
  if (!range) {
    return Status(Code::kInvalid, Reason::kBadChunk);
  }
  const std::string prefix = PagePrefix(ns, key, meta);
  chain_indexes_.Drop(prefix);  // (the chunk's bytes replace what the index describes)
  PageCache cache(engine_, nullptr, &prefix, &meta.cuckoo.filter, meta.cuckoo.page_size, &mem_,
                  scope.group);
  auto s = cache.WriteRange(range->filter, range->offset, data);
  if (!s.ok()) {
    return s;
  }
  rocksdb::WriteBatch batch;
  cache.AddDirty(&batch);
  if (meta.cuckoo.base_capacity != 0) {
    // Loaded bytes come with no counters: from now on the item count is the loader's word, not
    // a count of slots (the offline checker stops comparing the two; base_capacity 0 marks it).
    Metadata loaded = meta;
    loaded.cuckoo.base_capacity = 0;
    (void)batch.Put(engine_->metadata_cf(), meta_key, EncodeMetadata(loaded));
    return Commit(scope, &batch, &cache, {{meta_key, &loaded}});
  }
  return Commit(scope, &batch, &cache, {});
}

}  // namespace cuckood::storage
