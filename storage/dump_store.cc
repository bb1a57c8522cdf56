// DUMP and RESTORE of Db: a key's value as a Redis DUMP payload (core/rdb.h) and back.
//
// DUMP reads the metadata and every page through one RocksDB snapshot, as CF.SCANDUMP does, so
// the payload is one committed state. RESTORE decodes each sub-filter's bytes (LZF streamed
// through its 8 KiB window) straight into page writes of a new filter version: the payload and
// the write batch are the only copies of the filter, and the batch holds the metadata too, so the
// key changes in one step (a payload whose bytes turn out malformed writes nothing).
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstring>

#include "core/rdb.h"
#include "storage/db.h"
#include "storage/page_cache.h"

namespace cuckood::storage {
namespace {

const Status kBadFormat(Code::kInvalid, "ERR Bad data format");

// Bytes of non-zero pages a restore may put in its batch: a multiple of the payload's size
// (real fingerprints hardly compress, zeros are not written) plus a margin. A crafted payload
// (LZF expands a 3-byte copy to 264 bytes) cannot make the batch exhaust memory.
constexpr uint64_t kBatchBytesPerPayloadByte = 8;
constexpr uint64_t kBatchBytesMargin = 16ULL << 20;

// Cuts a sub-filter's byte stream into pages and adds each one that holds a fingerprint to the
// batch (a page never written reads as zeros), within *budget bytes.
class PageWriter {
 public:
  PageWriter(rocksdb::WriteBatch* batch, rocksdb::ColumnFamilyHandle* cf, const std::string& prefix,
             const PageGeometry& geo, uint16_t filter, uint64_t num_buckets, uint64_t* budget)
      : batch_(batch),
        cf_(cf),
        key_(EncodePageKey(prefix, filter, 0)),
        geo_(geo),
        filter_(filter),
        num_buckets_(num_buckets),
        budget_(budget) {}

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
    if (!empty) {
      if (bytes.size() > *budget_) {
        return false;
      }
      *budget_ -= bytes.size();
      SetPageKeySuffix(&key_, filter_, static_cast<uint32_t>(page_));
      (void)batch_->Put(cf_, key_, rocksdb::Slice(bytes.data(), bytes.size()));
    }
    ++page_;
    return true;
  }

  rocksdb::WriteBatch* batch_;
  rocksdb::ColumnFamilyHandle* cf_;
  std::string key_;
  const PageGeometry& geo_;
  uint16_t filter_;
  uint64_t num_buckets_;
  uint64_t* budget_;
  uint64_t page_ = 0;
  std::string buffer_;
};

}  // namespace

StatusOr<std::optional<std::string>> Db::Dump(uint16_t ns, std::string_view key) {
  SnapshotHolder snap(engine_);
  rocksdb::ReadOptions ro;
  ro.snapshot = snap.get();
  auto m = GetWith(ro, ns, key);
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
  auto old = Get(ns, key);
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
  uint64_t budget = kBatchBytesMargin;
  for (const auto& sub : payload.sub_filters) {
    budget += kBatchBytesPerPayloadByte * sub.bytes.size();
  }
  rocksdb::WriteBatch batch;
  for (uint32_t f = 0; f < filter.num_filters; ++f) {
    PageWriter pages(&batch, engine_->pages_cf(), prefix, geo, static_cast<uint16_t>(f),
                     core::SubFilterBuckets(filter, f), &budget);
    auto sink = [&pages](std::string_view piece) { return pages.Add(piece); };
    if (!core::rdb::Decode(payload.sub_filters[f], sink) || !pages.Done()) {
      return kBadFormat;
    }
    if (expired) {
      batch.Clear();  // only checked, never written
    }
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
    s = Commit(&batch, nullptr, {{mk, nullptr}});
  } else {
    (void)batch.Put(engine_->metadata_cf(), mk, EncodeMetadata(meta));
    s = Commit(&batch, nullptr, {{mk, &meta}});
  }
  if (!s.ok()) {
    return s;
  }
  return true;
}

}  // namespace cuckood::storage
