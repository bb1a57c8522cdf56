// DUMP, RESTORE, COPY and MOVE of Db: a key's value as a Redis DUMP payload (core/rdb.h) and
// back, and a key's value written under another name or namespace.
//
// DUMP reads the metadata and every page through one RocksDB snapshot, as CF.SCANDUMP does, so
// the payload is one committed state. RESTORE decodes each sub-filter's bytes (LZF streamed
// through its 8 KiB window) straight into page writes of a new filter version, written in
// batches of a few MiB while the version is pinned; the metadata comes in the last batch, so
// the key changes in one step and a payload whose bytes turn out malformed leaves only pages no
// metadata names (dropped by compaction like any dead version's).
//
// COPY (and MOVE, whose namespace is part of every page key) writes the same way: the source's
// pages, read through one snapshot, are written under the destination's name and a new version
// in batches of a few MiB, and the destination's metadata (with, for MOVE, the deletion of the
// source) comes in the last batch.
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "core/rdb.h"
#include "storage/db.h"
#include "storage/page_cache.h"

namespace cuckood::storage {
namespace {

const Status kBadFormat(Code::kInvalid, Reason::kBadDumpFormat);

// A restore's pages go to RocksDB in batches of about this size, under a version pinned until
// the metadata (in the last batch) is committed: the payload and one batch are all the restore
// holds, however large the filter.
constexpr size_t kPageBatchBytes = 8 << 20;

// The pages of a restore: batches written out as they fill (or, for a dry run, only counted),
// the last one left for the caller to add the metadata to.
class PageBatches {
 public:
  PageBatches(Engine* engine, bool dry_run) : engine_(engine), dry_run_(dry_run) {}
  rocksdb::WriteBatch* last() { return &batch_; }
  const Status& status() const { return status_; }

  bool Put(const std::string& key, std::string_view bytes) {
    (void)batch_.Put(engine_->pages_cf(), key, rocksdb::Slice(bytes.data(), bytes.size()));
    if (batch_.GetDataSize() < kPageBatchBytes) {
      return true;
    }
    if (!dry_run_) {
      status_ = engine_->Write(&batch_);
    }
    batch_.Clear();
    return status_.ok();
  }

 private:
  Engine* engine_;
  bool dry_run_;
  rocksdb::WriteBatch batch_;
  Status status_;
};

// Keeps a version's pages from the compaction filter while it lives (Engine::PinVersion).
class VersionPin {
 public:
  VersionPin(Engine* engine, uint64_t version) : engine_(engine), version_(version) {
    engine_->PinVersion(version_);
  }
  ~VersionPin() { engine_->UnpinVersion(version_); }
  VersionPin(const VersionPin&) = delete;
  VersionPin& operator=(const VersionPin&) = delete;

 private:
  Engine* engine_;
  uint64_t version_;
};

// Cuts a sub-filter's byte stream into pages and hands each one that holds a fingerprint to
// the batches (a page never written reads as zeros).
class PageWriter {
 public:
  PageWriter(PageBatches* out, const std::string& prefix, const PageGeometry& geo, uint16_t filter,
             uint64_t num_buckets)
      : out_(out),
        key_(EncodePageKey(prefix, filter, 0)),
        geo_(geo),
        filter_(filter),
        num_buckets_(num_buckets) {}

  bool Add(std::string_view piece) {
    while (!piece.empty()) {
      const uint64_t want = geo_.PageLength(page_, num_buckets_);
      if (want == 0) {
        return false;  // more bytes than the sub-filter holds
      }
      if (buffer_.empty() && piece.size() >= want) {
        if (!Put(piece.substr(0, static_cast<size_t>(want)))) {  // a whole page, no copy
          return false;
        }
        piece.remove_prefix(static_cast<size_t>(want));
        continue;
      }
      const size_t take =
          static_cast<size_t>(std::min<uint64_t>(want - buffer_.size(), piece.size()));
      buffer_.append(piece.substr(0, take));
      piece.remove_prefix(take);
      if (buffer_.size() == want) {
        if (!Put(buffer_)) {
          return false;
        }
        buffer_.clear();
      }
    }
    return true;
  }
  // true when every byte of the sub-filter came.
  bool Done() const { return buffer_.empty() && geo_.PageLength(page_, num_buckets_) == 0; }

 private:
  bool Put(std::string_view bytes) {
    const bool empty = std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
    ++page_;
    if (empty) {
      return true;
    }
    SetPageKeySuffix(&key_, filter_, static_cast<uint32_t>(page_ - 1));
    return out_->Put(key_, bytes);
  }

  PageBatches* out_;
  std::string key_;
  const PageGeometry& geo_;
  uint16_t filter_;
  uint64_t num_buckets_;
  uint64_t page_ = 0;
  std::string buffer_;
};

}  // namespace

StatusOr<std::optional<std::string>> Db::Dump(const Scope& scope, uint16_t ns,
                                              std::string_view key) {
  SnapshotHolder snap(engine_);
  rocksdb::ReadOptions ro;
  ro.snapshot = snap.get();
  auto m = GetWith(scope, ro, ns, key);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value()) {
    return std::optional<std::string>();
  }
  const Metadata& meta = **m;
  if (meta.type == KeyType::kString) {
    return std::optional<std::string>(core::rdb::DumpString(meta.value));
  }
  const core::FilterMeta& filter = meta.cuckoo.filter;
  PageCache cache(engine_, snap.get(), PagePrefix(ns, key, meta), &filter, meta.cuckoo.page_size);
  std::string payload;
  core::rdb::BeginCuckoo(&payload, filter);
  std::string bytes;
  for (uint32_t f = 0; f < filter.num_filters; ++f) {
    auto s = cache.ReadRange(f, 0, core::SubFilterBytes(filter, f), &bytes);
    if (!s.ok()) {
      return s;
    }
    core::rdb::AppendSubFilter(&payload, core::SubFilterBuckets(filter, f), bytes);
  }
  core::rdb::EndCuckoo(&payload);
  return std::optional<std::string>(std::move(payload));
}

StatusOr<bool> Db::Restore(uint16_t ns, std::string_view key, const core::rdb::Payload& payload,
                           uint64_t expire_ms, const CfSettings& settings) {
  auto old = Get(kAlone, ns, key);
  if (!old.ok()) {
    return old.status();
  }
  const bool expired = expire_ms != 0 && expire_ms <= NowMs();
  if (payload.type == core::rdb::kTypeString) {
    std::string value;
    if (!core::rdb::DecodeToString(payload.string, &value)) {
      return kBadFormat;
    }
    if (expired) {
      // Redis loads the value, then drops it: the old key goes (REPLACE), nothing is created.
      return old->has_value() ? Delete(ns, key) : StatusOr<bool>(false);
    }
    auto s = SetString(ns, key, value, expire_ms, false);
    if (!s.ok()) {
      return s;
    }
    return true;
  }
  const core::FilterMeta& filter = payload.filter;
  core::Limits limits;
  limits.max_filter_bytes =
      EffectiveMaxFilterBytes(settings.max_filter_bytes, settings.page_size, filter.bucket_size);
  if (!core::DecodeHeader(core::EncodeHeader(filter), limits)) {
    return kBadFormat;  // larger than this server holds (cf-max-filter-bytes)
  }
  auto version = engine_->NewVersion();
  if (!version.ok()) {
    return version.status();
  }
  Metadata meta;
  meta.type = KeyType::kCuckoo;
  meta.version = *version;
  meta.expire_ms = expire_ms;
  meta.size = filter.num_items;
  meta.cuckoo.filter = filter;
  meta.cuckoo.base_capacity = 0;  // loaded bytes: num_items is the dump's word, as for LOADCHUNK
  meta.cuckoo.page_size = settings.page_size;
  const std::string prefix = EncodePagePrefix(ns, key, meta.version);
  const PageGeometry geo(meta.cuckoo.page_size, filter.bucket_size);
  VersionPin pin(engine_, meta.version);
  PageBatches pages(engine_, /*dry_run=*/expired);
  for (uint32_t f = 0; f < filter.num_filters; ++f) {
    PageWriter writer(&pages, prefix, geo, static_cast<uint16_t>(f),
                      core::SubFilterBuckets(filter, f));
    auto sink = [&writer](std::string_view piece) { return writer.Add(piece); };
    const bool decoded = core::rdb::Decode(payload.sub_filters[f], sink) && writer.Done();
    if (!pages.status().ok()) {
      return pages.status();
    }
    if (!decoded) {
      return kBadFormat;  // (pages already written stay unreachable: no metadata names them)
    }
  }
  rocksdb::WriteBatch& batch = *pages.last();
  if (expired) {
    batch.Clear();  // only checked, never written
  }
  const std::string mk = EncodeMetaKey(ns, key);
  if (old->has_value()) {
    DropAlias(&batch, ns, **old);
  }
  Status s;
  if (expired) {
    if (!old->has_value()) {
      return false;
    }
    (void)batch.Delete(engine_->metadata_cf(), mk);
    s = Commit(kAlone, &batch, nullptr, {{mk, nullptr}});
  } else {
    (void)batch.Put(engine_->metadata_cf(), mk, EncodeMetadata(meta));
    s = Commit(kAlone, &batch, nullptr, {{mk, &meta}});
  }
  if (!s.ok()) {
    return s;
  }
  return true;
}

StatusOr<bool> Db::Copy(uint16_t src_ns, std::string_view src, uint16_t dst_ns,
                        std::string_view dst, bool replace) {
  if (src_ns == dst_ns && src == dst) {
    return Status(Code::kInvalid, Reason::kSameObject);
  }
  return CopyValue(src_ns, src, dst_ns, dst, replace, /*move=*/false);
}

StatusOr<bool> Db::Move(uint16_t src_ns, uint16_t dst_ns, std::string_view key) {
  if (src_ns == dst_ns) {
    return Status(Code::kInvalid, Reason::kSameObject);
  }
  return CopyValue(src_ns, key, dst_ns, key, /*replace=*/false, /*move=*/true);
}

StatusOr<bool> Db::CopyValue(uint16_t src_ns, std::string_view src, uint16_t dst_ns,
                             std::string_view dst, bool replace, bool move) {
  // Every write of src and dst is stored before the snapshot (the caller holds their stripes,
  // so none is under way).
  SnapshotHolder snap(engine_);
  rocksdb::ReadOptions ro;
  ro.snapshot = snap.get();
  auto m = GetWith(kAlone, ro, src_ns, src);
  if (!m.ok()) {
    return m.status();
  }
  if (!m->has_value()) {
    return false;
  }
  auto old = GetWith(kAlone, ro, dst_ns, dst);
  if (!old.ok()) {
    return old.status();
  }
  if (old->has_value() && !replace) {
    return false;
  }
  const Metadata& from = **m;
  Metadata meta = from;
  std::optional<VersionPin> pin;
  PageBatches pages(engine_, /*dry_run=*/false);
  if (from.type == KeyType::kCuckoo) {
    auto version = engine_->NewVersion();
    if (!version.ok()) {
      return version.status();
    }
    meta.version = *version;
    meta.cuckoo.owner.clear();  // the copy's pages are under its own name
    pin.emplace(engine_, meta.version);
    const std::string from_prefix = PagePrefix(src_ns, src, from);
    const std::string from_end = from_prefix + std::string(kPageKeySuffix, '\xff');
    std::string key = EncodePageKey(EncodePagePrefix(dst_ns, dst, meta.version), 0, 0);
    const size_t suffix_at = key.size() - kPageKeySuffix;
    rocksdb::ReadOptions iro = ro;
    rocksdb::Slice upper(from_end);
    iro.iterate_upper_bound = &upper;
    iro.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(engine_->db()->NewIterator(iro, engine_->pages_cf()));
    for (it->Seek(from_prefix); it->Valid(); it->Next()) {
      const auto k = it->key();
      if (k.size() != from_prefix.size() + kPageKeySuffix) {
        continue;  // not a page of this version (a longer owner name sharing the prefix)
      }
      key.replace(suffix_at, kPageKeySuffix, k.data() + from_prefix.size(), kPageKeySuffix);
      const auto v = it->value();
      if (!pages.Put(key, std::string_view(v.data(), v.size()))) {
        return pages.status();  // (pages written so far stay unreachable, as for RESTORE)
      }
    }
    if (!it->status().ok()) {
      return Engine::FromRocks(it->status());
    }
  }
  rocksdb::WriteBatch& batch = *pages.last();
  const std::string src_key = EncodeMetaKey(src_ns, src);
  const std::string dst_key = EncodeMetaKey(dst_ns, dst);
  if (old->has_value()) {
    DropAlias(&batch, dst_ns, **old);
  }
  (void)batch.Put(engine_->metadata_cf(), dst_key, EncodeMetadata(meta));
  Status s;
  if (move) {
    (void)batch.Delete(engine_->metadata_cf(), src_key);
    DropAlias(&batch, src_ns, from);
    s = Commit(kAlone, &batch, nullptr, {{src_key, nullptr}, {dst_key, &meta}});
  } else {
    s = Commit(kAlone, &batch, nullptr, {{dst_key, &meta}});
  }
  if (!s.ok()) {
    return s;
  }
  return true;
}

}  // namespace cuckood::storage
