// Cuckoo filter operations of Db: each command reads the metadata, runs core/ over a PageCache
// and commits dirty pages plus metadata in one WriteBatch. A command that fails writes nothing.
#include <rocksdb/write_batch.h>

#include <optional>

#include "storage/db.h"
#include "storage/page_cache.h"
#include "storage/write_group.h"

namespace cuckood::storage {
namespace {

std::vector<core::ItemHash> HashAll(const std::vector<std::string_view>& items) {
  std::vector<core::ItemHash> out;
  out.reserve(items.size());
  for (auto item : items) {
    out.push_back(core::HashItem(item));
  }
  return out;
}

const Status kWrongType(Code::kWrongType, "");

}  // namespace

std::string Db::PagePrefix(uint16_t ns, std::string_view key, const Metadata& meta) const {
  std::string_view owner = meta.cuckoo.owner.empty() ? key : std::string_view(meta.cuckoo.owner);
  return EncodePagePrefix(ns, owner, meta.version);
}

Status Db::CommitFilter(PageCache* cache, const std::string& meta_key, const Metadata& meta) {
  if (auto* group = WriteGroup::For(&mem_)) {
    if (cache != nullptr) {
      cache->AddDirty(group);
    }
    group->AddMeta(MetaCacheKey(meta_key),
                   std::make_shared<const std::string>(EncodeMetadata(meta)));
    return Status::Ok();
  }
  rocksdb::WriteBatch batch;
  if (cache != nullptr) {
    cache->AddDirty(&batch);
  }
  (void)batch.Put(engine_->metadata_cf(), meta_key, EncodeMetadata(meta));
  return Commit(&batch, cache, {{meta_key, &meta}});
}

core::Limits Db::LimitsFor(const Metadata& meta, const CfSettings& settings) const {
  core::Limits limits;
  limits.max_filter_bytes = EffectiveMaxFilterBytes(
      settings.max_filter_bytes, meta.cuckoo.page_size, meta.cuckoo.filter.bucket_size);
  return limits;
}

StatusOr<Metadata> Db::NewFilter(uint64_t capacity, uint16_t bucket_size, uint16_t max_iterations,
                                 uint16_t expansion, const CfSettings& settings) {
  core::Limits limits;
  limits.max_filter_bytes =
      EffectiveMaxFilterBytes(settings.max_filter_bytes, settings.page_size, bucket_size);
  uint64_t buckets = core::BaseBuckets(capacity, bucket_size, settings.sizing, limits);
  if (buckets == 0) {
    return Status(Code::kInvalid, "ERR Insufficient memory to create filter");
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

Status Db::CfReserve(uint16_t ns, std::string_view key, const ReserveArgs& args,
                     const CfSettings& settings) {
  auto m = Get(ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (m->has_value()) {
    return (*m)->type == KeyType::kCuckoo ? Status(Code::kExists, "ERR item exists") : kWrongType;
  }
  auto meta =
      NewFilter(args.capacity, args.bucket_size, args.max_iterations, args.expansion, settings);
  if (!meta.ok()) {
    return meta.status();
  }
  // Only metadata: pages are created when first written.
  return CommitFilter(nullptr, EncodeMetaKey(ns, key), *meta);
}

StatusOr<InsertOutcome> Db::CfInsert(uint16_t ns, std::string_view key,
                                     const std::vector<std::string_view>& items, bool nx,
                                     bool no_create, uint64_t capacity,
                                     const CfSettings& settings) {
  auto m = Get(ns, key);
  if (!m.ok()) {
    return m.status();
  }
  bool created = false;
  Metadata meta;
  if (!m->has_value()) {
    if (no_create) {
      return Status(Code::kNotFound, "ERR not found");
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
  const std::string meta_key = EncodeMetaKey(ns, key);
  InsertOutcome out;
  if (meta.cuckoo.filter.num_filters >= settings.max_expansions) {
    // RedisBloom refuses before looking at any item, but an auto-created key stays.
    out.max_expansions = true;
    if (created) {
      auto s = CommitFilter(nullptr, meta_key, meta);
      if (!s.ok()) {
        return s;
      }
    }
    return out;
  }
  auto hashes = HashAll(items);
  auto& filter = meta.cuckoo.filter;
  PageCache cache(engine_, nullptr, PagePrefix(ns, key, meta), &filter, meta.cuckoo.page_size,
                  &mem_);
  cache.Prefetch(hashes);
  const core::Limits limits = LimitsFor(meta, settings);
  out.results.reserve(hashes.size());
  bool changed = created;
  for (const auto& h : hashes) {
    auto r = core::Insert(filter, cache, h, nx, limits);
    if (r == core::InsertResult::kIoError) {
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
  auto s = CommitFilter(&cache, meta_key, meta);
  if (!s.ok()) {
    return s;
  }
  return out;
}

StatusOr<std::vector<uint64_t>> Db::CfLookup(uint16_t ns, std::string_view key,
                                             const std::vector<std::string_view>& items,
                                             bool count) {
  std::vector<uint64_t> out(items.size(), 0);
  // The caller holds the key's stripe shared, so no writer of this key runs meanwhile: the
  // metadata and pages (from the in-memory cache, the rest in one MultiGet) are one state. A
  // caller that could not take the stripe reads one RocksDB snapshot instead.
  std::optional<SnapshotHolder> snap;
  rocksdb::ReadOptions ro;
  if (UncachedReads::active()) {
    snap.emplace(engine_);
    ro.snapshot = snap->get();
  }
  auto m = LookupMeta(ro, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (*m == nullptr || (*m)->meta.type != KeyType::kCuckoo) {
    return out;  // RedisBloom answers 0 for a missing key and for another type alike
  }
  const Metadata& meta = (*m)->meta;
  auto hashes = HashAll(items);
  // The pages are borrowed from the in-memory cache for the lookup (MemCache::ReadSection;
  // opened after LookupMeta, whose record is kept by the thread). The section closes after the
  // page cache that holds them.
  MemCache::ReadSection section;
  PageCache cache(engine_, ro.snapshot, &(*m)->page_prefix, &meta.cuckoo.filter,
                  meta.cuckoo.page_size, &mem_);
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

StatusOr<bool> Db::CfDelete(uint16_t ns, std::string_view key, std::string_view item,
                            const CfSettings&) {
  auto m = Get(ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value() || (*m)->type != KeyType::kCuckoo) {
    return Status(Code::kNotFound, "Not found");
  }
  Metadata meta = std::move(**m);
  auto& filter = meta.cuckoo.filter;
  const std::string meta_key = EncodeMetaKey(ns, key);
  PageCache cache(engine_, nullptr, PagePrefix(ns, key, meta), &filter, meta.cuckoo.page_size,
                  &mem_);
  cache.set_on_checkpoint([&](rocksdb::WriteBatch* batch) {
    meta.size = filter.num_items;
    auto encoded = EncodeMetadata(meta);
    (void)batch->Put(engine_->metadata_cf(), meta_key, encoded);
    cache.AddPublish(MetaCacheKey(meta_key), std::move(encoded));
  });
  auto h = core::HashItem(item);
  cache.Prefetch(std::span<const core::ItemHash>(&h, 1));
  auto r = core::Delete(filter, cache, h);
  pages_loaded_ += cache.pages_loaded();
  if (r == core::DeleteResult::kIoError) {
    return cache.status();
  }
  if (r == core::DeleteResult::kNotFound) {
    return false;
  }
  meta.size = filter.num_items;
  auto s = CommitFilter(&cache, meta_key, meta);
  if (!s.ok()) {
    return s;
  }
  return true;
}

Status Db::CfCompact(uint16_t ns, std::string_view key, const CfSettings&) {
  auto m = Get(ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value() || (*m)->type != KeyType::kCuckoo) {
    return Status(Code::kNotFound, "Cuckoo filter was not found");
  }
  Metadata meta = std::move(**m);
  auto& filter = meta.cuckoo.filter;
  const std::string meta_key = EncodeMetaKey(ns, key);
  PageCache cache(engine_, nullptr, PagePrefix(ns, key, meta), &filter, meta.cuckoo.page_size,
                  &mem_);
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
  return Commit(&batch, &cache, {{meta_key, &meta}});
}

StatusOr<Metadata> Db::CfInfo(uint16_t ns, std::string_view key) {
  auto m = Get(ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value()) {
    return Status(Code::kNotFound, "ERR not found");
  }
  if ((*m)->type != KeyType::kCuckoo) {
    return kWrongType;
  }
  return std::move(**m);
}

StatusOr<ScanDumpChunk> Db::CfScanDump(uint16_t ns, std::string_view key, int64_t iter) {
  SnapshotHolder snap(engine_);
  rocksdb::ReadOptions ro;
  ro.snapshot = snap.get();
  auto m = GetWith(ro, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value()) {
    return Status(Code::kNotFound, "ERR not found");
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
  PageCache cache(engine_, snap.get(), PagePrefix(ns, key, meta), &meta.cuckoo.filter,
                  meta.cuckoo.page_size);
  std::string bytes;
  auto s = cache.ReadRange(range->filter, range->offset, range->length, &bytes);
  if (!s.ok()) {
    return s;
  }
  out.next = range->next_iter;
  out.data = std::move(bytes);
  return out;
}

Status Db::CfLoadChunk(uint16_t ns, std::string_view key, int64_t iter, std::string_view data,
                       const CfSettings& settings) {
  auto m = Get(ns, key);
  if (!m.ok()) {
    return m.status();
  }
  const std::string meta_key = EncodeMetaKey(ns, key);
  if (iter == 1) {
    if (m->has_value()) {
      return (*m)->type == KeyType::kCuckoo ? Status(Code::kExists, "ERR item exists") : kWrongType;
    }
    if (data.size() != core::kHeaderSize) {
      return Status(Code::kInvalid, "Invalid header");
    }
    const uint16_t bucket_size = static_cast<uint16_t>(static_cast<uint8_t>(data[32]) |
                                                       (static_cast<uint8_t>(data[33]) << 8));
    core::Limits limits;
    limits.max_filter_bytes =
        EffectiveMaxFilterBytes(settings.max_filter_bytes, settings.page_size, bucket_size);
    auto filter = core::DecodeHeader(data, limits);
    if (!filter) {
      return Status(Code::kInvalid, "Couldn't create filter!");
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
    return Commit(&batch, nullptr, {{meta_key, &meta}});
  }
  if (!m->has_value()) {
    return Status(Code::kNotFound, "ERR not found");
  }
  if ((*m)->type != KeyType::kCuckoo) {
    return kWrongType;
  }
  const Metadata& meta = **m;
  auto range = core::LoadRange(meta.cuckoo.filter, iter, data.size());
  if (!range) {
    return Status(Code::kInvalid, "Couldn't load chunk!");
  }
  PageCache cache(engine_, nullptr, PagePrefix(ns, key, meta), &meta.cuckoo.filter,
                  meta.cuckoo.page_size, &mem_);
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
    return Commit(&batch, &cache, {{meta_key, &loaded}});
  }
  return Commit(&batch, &cache, {});
}

}  // namespace cuckood::storage
