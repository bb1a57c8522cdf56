// The CF.SCANDUMP / CF.LOADCHUNK codec and the filter operations on whatever a LOADCHUNK header
// can describe.
//
// Input: a 38-byte header (shorter inputs are zero-padded; the unpadded bytes must be refused),
// then bytes that drive the rest: iterators and lengths for DumpRange / LoadRange, chunk
// contents, and a sequence of Insert / Exists / Count / Delete / Compact operations.
//
// Invariants:
// - DecodeHeader accepts exactly RedisBloom 2.8's headers, and EncodeHeader gives the header
//   back (with numFilters' high 48 bits dropped, as RedisBloom drops them);
// - every range DumpRange / LoadRange hands out lies inside one sub-filter at the position the
//   iterator names; a SCANDUMP walk from iterator 1 covers every byte once, and LOADCHUNK accepts
//   each of its chunks at the place it came from;
// - on a small filter (at most kOpsMaxBytes): no access outside the chain, num_items and the
//   number of stored fingerprints move together, compaction keeps every fingerprint, and, when
//   every sub-filter's bucket count is a power of two (where RedisBloom's algorithm guarantees it),
//   a refused insert changes nothing, and nothing inserted and not deleted is ever missing.
//   (LOADCHUNK accepts an expansion that is not a power of two; then the kick-out rollback is
//   inexact, as in RedisBloom, and only memory safety and the counters are checked.)
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dump.h"
#include "core/filter.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace cuckood::core;

// Filters up to this many bytes (all sub-filters) get the operations run on them.
constexpr uint64_t kOpsMaxBytes = 64 * 1024;
// Sub-filters a filter may grow while operations run.
constexpr uint64_t kOpsMaxFilterBytes = 16 * 1024;
// Bounds on the work one input may cause.
constexpr int kMaxRangeQueries = 16;
constexpr uint64_t kMaxScanSteps = 4096;
constexpr uint64_t kScanWork = 1 << 18;  // scan steps x sub-filters
constexpr int kMaxOps = 64;
constexpr uint32_t kMaxFiltersForOps = 256;
// Bucket accesses one input's operations may make (a header may ask for 65535 kick-out steps).
constexpr uint64_t kMaxAccesses = 100000;

bool IsPow2(uint64_t x) {
  return x != 0 && (x & (x - 1)) == 0;
}

// Bytes of the sub-filters before f.
uint64_t Prefix(const FilterMeta& meta, uint32_t f) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < f; ++i) {
    sum += SubFilterBytes(meta, i);
  }
  return sum;
}

void CheckRange(const FilterMeta& meta, const ChunkRange& range) {
  FUZZ_CHECK(range.filter < meta.num_filters);
  const uint64_t size = SubFilterBytes(meta, range.filter);
  FUZZ_CHECK(range.length > 0);
  FUZZ_CHECK(range.offset < size);
  FUZZ_CHECK(range.length <= size - range.offset);
}

// Buckets in one vector per sub-filter, allocated on first touch. Checks that the algorithms
// stay inside the chain described by `meta` (which they update as they run).
class VectorAccess : public BucketAccess {
 public:
  explicit VectorAccess(const FilterMeta& meta) : meta_(meta) {}

  const uint8_t* Read(uint32_t f, uint64_t b) override { return Bucket(f, b); }
  uint8_t* Write(uint32_t f, uint64_t b) override { return Bucket(f, b); }

  uint64_t NextMaybeNonEmpty(uint32_t f, uint64_t b, uint64_t num_buckets) override {
    FUZZ_CHECK(f < meta_.num_filters);
    FUZZ_CHECK(num_buckets == SubFilterBuckets(meta_, f));
    if (f >= subs_.size() || subs_[f].empty()) {
      return num_buckets;
    }
    const uint64_t bs = meta_.bucket_size;
    for (; b < num_buckets; ++b) {
      for (uint64_t s = 0; s < bs; ++s) {
        if (subs_[f][b * bs + s] != 0) {
          return b;
        }
      }
    }
    return num_buckets;
  }

  uint8_t* Bucket(uint32_t f, uint64_t b) {
    ++accesses_;
    FUZZ_CHECK(f < meta_.num_filters);
    const uint64_t n = SubFilterBuckets(meta_, f);
    FUZZ_CHECK(b < n);
    if (subs_.size() <= f) {
      subs_.resize(f + 1);
    }
    if (subs_[f].empty()) {
      subs_[f].assign(n * meta_.bucket_size, 0);
    }
    return subs_[f].data() + b * meta_.bucket_size;
  }

  void WriteBytes(uint32_t f, uint64_t offset, std::string_view bytes) {
    uint8_t* base = Bucket(f, 0);
    for (size_t i = 0; i < bytes.size(); ++i) {
      base[offset + i] = static_cast<uint8_t>(bytes[i]);
    }
  }

  uint64_t Fingerprints() const {
    uint64_t n = 0;
    for (const auto& sub : subs_) {
      for (uint8_t v : sub) {
        n += v != 0 ? 1 : 0;
      }
    }
    return n;
  }

  // Storage of sub-filters past the chain must be empty: a later growth reads it as new.
  void CheckBeyondChainEmpty() {
    for (size_t f = meta_.num_filters; f < subs_.size(); ++f) {
      for (uint8_t v : subs_[f]) {
        FUZZ_CHECK(v == 0);
      }
      subs_[f].clear();
    }
  }

  const std::vector<std::vector<uint8_t>>& subs() const { return subs_; }
  uint64_t accesses() const { return accesses_; }

 private:
  const FilterMeta& meta_;
  uint64_t accesses_ = 0;
  std::vector<std::vector<uint8_t>> subs_;
};

bool SameMeta(const FilterMeta& a, const FilterMeta& b) {
  return a.num_items == b.num_items && a.num_deletes == b.num_deletes &&
         a.base_num_buckets == b.base_num_buckets && a.num_filters == b.num_filters &&
         a.bucket_size == b.bucket_size && a.max_iterations == b.max_iterations &&
         a.expansion == b.expansion;
}

void CheckHeader(std::string_view header, const FilterMeta& meta, const Limits& limits) {
  FUZZ_CHECK(meta.bucket_size >= 1 && meta.bucket_size <= 255);
  FUZZ_CHECK(IsPow2(meta.base_num_buckets) && meta.base_num_buckets <= kMaxBuckets);
  FUZZ_CHECK(meta.num_filters >= 1 && meta.num_filters <= kMaxSubFilters);
  FUZZ_CHECK(meta.max_iterations >= 1);
  FUZZ_CHECK(meta.expansion != 0 || meta.num_filters == 1);
  for (uint32_t i = 0; i < meta.num_filters; ++i) {
    const uint64_t bytes = SubFilterBytes(meta, i);
    FUZZ_CHECK(bytes != 0 && bytes <= limits.max_filter_bytes);
  }
  std::string expected(header);
  for (size_t i = 26; i < 32; ++i) {
    expected[i] = '\0';  // numFilters is a u16 inside
  }
  const std::string encoded = EncodeHeader(meta);
  FUZZ_CHECK(encoded == expected);
  const auto again = DecodeHeader(encoded, limits);
  FUZZ_CHECK(again.has_value() && SameMeta(*again, meta));
}

void QueryRanges(const FilterMeta& meta, FuzzedDataProvider& in) {
  const int queries = in.ConsumeIntegralInRange(0, kMaxRangeQueries);
  for (int q = 0; q < queries && in.remaining_bytes() > 0; ++q) {
    const auto iter = in.ConsumeIntegral<int64_t>();
    const auto length = in.ConsumeIntegral<uint64_t>();
    if (auto dump = DumpRange(meta, iter)) {
      FUZZ_CHECK(iter >= 1);
      CheckRange(meta, *dump);
      FUZZ_CHECK(dump->length <= kMaxChunkBytes);
      FUZZ_CHECK(dump->next_iter - iter == static_cast<int64_t>(dump->length));
    }
    if (auto load = LoadRange(meta, iter, length)) {
      CheckRange(meta, *load);
      FUZZ_CHECK(load->length == length && load->next_iter == iter);
      // The chunk ends just before the iterator.
      FUZZ_CHECK(static_cast<uint64_t>(iter) - 1 - length ==
                 Prefix(meta, load->filter) + load->offset);
    }
  }
}

// A SCANDUMP walk from iterator 1; on a small filter each chunk is then loaded back with bytes
// from the input (CF.LOADCHUNK). Each step costs O(num_filters), so long chains walk fewer steps.
void Scan(const FilterMeta& meta, FuzzedDataProvider& in, VectorAccess* access) {
  const uint64_t steps = std::min<uint64_t>(kMaxScanSteps, kScanWork / meta.num_filters + 1);
  int64_t iter = 1;
  uint64_t covered = 0;
  uint32_t filter = 0;
  uint64_t filter_start = 0;  // Prefix(meta, filter)
  for (uint64_t step = 0; step < steps; ++step) {
    const auto dump = DumpRange(meta, iter);
    if (!dump) {
      // The walk ends exactly after the last byte of the last sub-filter.
      FUZZ_CHECK(filter + 1 == meta.num_filters);
      FUZZ_CHECK(covered == filter_start + SubFilterBytes(meta, filter));
      return;
    }
    CheckRange(meta, *dump);
    FUZZ_CHECK(static_cast<uint64_t>(iter) - 1 == covered);
    if (dump->filter != filter) {
      // The previous sub-filter was covered whole; the walk moves to the next one.
      FUZZ_CHECK(dump->filter == filter + 1);
      filter_start += SubFilterBytes(meta, filter);
      filter = dump->filter;
      FUZZ_CHECK(covered == filter_start);
    }
    FUZZ_CHECK(filter_start + dump->offset == covered);
    const auto load = LoadRange(meta, dump->next_iter, dump->length);
    FUZZ_CHECK(load.has_value());
    FUZZ_CHECK(load->filter == dump->filter && load->offset == dump->offset &&
               load->length == dump->length);
    if (access != nullptr && in.ConsumeBool()) {
      const std::string bytes = in.ConsumeBytesAsString(dump->length);
      access->WriteBytes(dump->filter, dump->offset, bytes);
    }
    covered += dump->length;
    iter = dump->next_iter;
  }
}

struct Snapshot {
  FilterMeta meta;
  std::vector<std::vector<uint8_t>> subs;
};

class OpsRunner {
 public:
  OpsRunner(FilterMeta& meta, VectorAccess& access, bool model_valid)
      : meta_(meta), access_(access), model_valid_(model_valid) {
    limits_.max_filter_bytes = kOpsMaxFilterBytes;
  }

  void Run(FuzzedDataProvider& in) {
    const int ops = in.ConsumeIntegralInRange(0, kMaxOps);
    for (int op = 0; op < ops && in.remaining_bytes() > 0 && access_.accesses() < kMaxAccesses;
         ++op) {
      const int kind = in.ConsumeIntegralInRange(0, 5);
      // A small item space, so items repeat and collide.
      const auto id = in.ConsumeIntegralInRange<uint32_t>(0, 300);
      const std::string item = "item:" + std::to_string(id);
      switch (kind) {
        case 0:
        case 1:
          DoInsert(item, /*nx=*/kind == 1);
          break;
        case 2:
          DoDelete(item);
          break;
        case 3:
          DoLookup(item);
          break;
        case 4:
          if (meta_.num_filters <= kMaxFiltersForOps) {
            DoCompact(in.ConsumeBool());
          }
          break;
        default:
          DoLookup(item);
          break;
      }
      access_.CheckBeyondChainEmpty();
      CheckModel(item, /*all=*/false);
    }
    CheckModel(std::string(), /*all=*/true);
  }

 private:
  Snapshot Take() const { return {meta_, access_.subs()}; }

  // A refused operation changes nothing. With a bucket count that is not a power of two the
  // kick-out's rollback retraces a different path and may leave fingerprints moved, lost or
  // duplicated, exactly as RedisBloom's does, so then only the metadata is compared.
  void CheckUnchanged(const Snapshot& before) {
    FUZZ_CHECK(SameMeta(before.meta, meta_));
    if (!model_valid_) {
      return;
    }
    // Sub-filters never touched may still be unallocated on one side.
    for (size_t f = 0; f < std::max(before.subs.size(), access_.subs().size()); ++f) {
      const auto* a = f < before.subs.size() ? &before.subs[f] : nullptr;
      const auto* b = f < access_.subs().size() ? &access_.subs()[f] : nullptr;
      const bool a_empty = a == nullptr || a->empty();
      const bool b_empty = b == nullptr || b->empty();
      if (a_empty || b_empty) {
        for (const auto* v : {a, b}) {
          if (v != nullptr) {
            for (uint8_t x : *v) {
              FUZZ_CHECK(x == 0);
            }
          }
        }
      } else {
        FUZZ_CHECK(*a == *b);
      }
    }
  }

  void DoInsert(const std::string& item, bool nx) {
    if (meta_.num_filters > kMaxFiltersForOps) {
      return;
    }
    const ItemHash hash = HashItem(item);
    const Snapshot before = Take();
    const uint64_t stored = access_.Fingerprints();
    const InsertResult r = Insert(meta_, access_, hash, nx, limits_);
    switch (r) {
      case InsertResult::kInserted:
        FUZZ_CHECK(meta_.num_items == before.meta.num_items + 1);
        // (A failed kick-out before a growth rolls back inexactly when not a power of two.)
        FUZZ_CHECK(!model_valid_ || access_.Fingerprints() == stored + 1);
        FUZZ_CHECK(meta_.num_filters >= before.meta.num_filters);
        ++model_[item];
        break;
      case InsertResult::kExists:
        FUZZ_CHECK(nx);
        CheckUnchanged(before);
        break;
      case InsertResult::kFull:
        FUZZ_CHECK(meta_.expansion == 0);
        CheckUnchanged(before);
        break;
      case InsertResult::kGrowthFailed:
        FUZZ_CHECK(meta_.expansion != 0);
        CheckUnchanged(before);
        break;
      case InsertResult::kIoError:
        FUZZ_CHECK(false);  // the accessor never fails and the meta came from DecodeHeader
        break;
    }
    bool io_error = true;
    const bool found = Exists(meta_, access_, hash, &io_error);
    FUZZ_CHECK(!io_error);
    // (Not a power of two: a kick-out chain may move the new fingerprint to a bucket lookups do
    // not visit, as in RedisBloom.)
    if (model_valid_ && (r == InsertResult::kInserted || r == InsertResult::kExists)) {
      FUZZ_CHECK(found);
    }
  }

  void DoDelete(const std::string& item) {
    if (meta_.num_filters > kMaxFiltersForOps) {
      return;
    }
    // Deleting something never inserted may remove another item's fingerprint (a cuckoo filter
    // property), so under the model only inserted items are deleted.
    if (model_valid_ && model_[item] == 0) {
      DoLookup(item);
      return;
    }
    const ItemHash hash = HashItem(item);
    bool io_error = true;
    const uint64_t count = Count(meta_, access_, hash, &io_error);
    FUZZ_CHECK(!io_error);
    const Snapshot before = Take();
    const uint64_t stored = access_.Fingerprints();
    const DeleteResult r = Delete(meta_, access_, hash);
    FUZZ_CHECK(r != DeleteResult::kIoError);
    if (r == DeleteResult::kNotFound) {
      FUZZ_CHECK(count == 0);
      FUZZ_CHECK(!model_valid_);
      CheckUnchanged(before);
      return;
    }
    FUZZ_CHECK(count > 0);
    FUZZ_CHECK(meta_.num_items == before.meta.num_items - 1);
    FUZZ_CHECK(access_.Fingerprints() == stored - 1);
    FUZZ_CHECK(meta_.num_filters <= before.meta.num_filters);
    if (model_[item] > 0) {
      --model_[item];
    }
  }

  void DoLookup(const std::string& item) {
    const ItemHash hash = HashItem(item);
    bool io_error = true;
    const bool found = Exists(meta_, access_, hash, &io_error);
    FUZZ_CHECK(!io_error);
    io_error = true;
    const uint64_t count = Count(meta_, access_, hash, &io_error);
    FUZZ_CHECK(!io_error);
    FUZZ_CHECK(found == (count > 0));
  }

  void DoCompact(bool stop_on_stuck) {
    const uint64_t stored = access_.Fingerprints();
    const uint32_t filters = meta_.num_filters;
    const uint64_t items = meta_.num_items;
    FUZZ_CHECK(Compact(meta_, access_, stop_on_stuck));
    FUZZ_CHECK(meta_.num_deletes == 0);
    FUZZ_CHECK(meta_.num_items == items);
    FUZZ_CHECK(meta_.num_filters >= 1 && meta_.num_filters <= filters);
    access_.CheckBeyondChainEmpty();
    FUZZ_CHECK(access_.Fingerprints() == stored);
  }

  // No false negatives (only where RedisBloom's algorithm promises it). After each operation
  // the item it touched and a few others in turn; at the end every item.
  void CheckModel(const std::string& touched, bool all) {
    if (!model_valid_) {
      return;
    }
    size_t index = 0;
    for (const auto& [item, copies] : model_) {
      const bool pick = all || item == touched || index++ % kModelStride == rotation_;
      if (copies == 0 || !pick) {
        continue;
      }
      bool io_error = true;
      FUZZ_CHECK(Exists(meta_, access_, HashItem(item), &io_error));
      FUZZ_CHECK(!io_error);
    }
    rotation_ = (rotation_ + 1) % kModelStride;
  }

  static constexpr size_t kModelStride = 16;

  FilterMeta& meta_;
  VectorAccess& access_;
  Limits limits_;
  bool model_valid_;
  std::map<std::string, uint32_t> model_;
  size_t rotation_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string_view data(reinterpret_cast<const char*>(bytes), size);
  const Limits limits;  // the default max_filter_bytes, 64 GiB a sub-filter

  std::string header(data.substr(0, kHeaderSize));
  if (header.size() != kHeaderSize) {
    FUZZ_CHECK(!DecodeHeader(header, limits).has_value());  // "Invalid header"
    header.resize(kHeaderSize, '\0');
  }
  const std::optional<FilterMeta> decoded = DecodeHeader(header, limits);
  if (!decoded) {
    return 0;  // "Couldn't create filter!"
  }
  const size_t used = std::min(size, kHeaderSize);
  FuzzedDataProvider in(bytes + used, size - used);
  FilterMeta meta = *decoded;
  CheckHeader(header, meta, limits);
  QueryRanges(meta, in);

  uint64_t total = 0;
  for (uint32_t i = 0; i < meta.num_filters && total <= kOpsMaxBytes; ++i) {
    total += SubFilterBytes(meta, i);
  }
  if (total > kOpsMaxBytes) {
    Scan(meta, in, nullptr);
    return 0;
  }
  VectorAccess access(meta);
  Scan(meta, in, &access);
  // RedisBloom guarantees no false negatives only when every bucket count is a power of two
  // (then the alternate-bucket map is an involution and compaction keeps candidate pairs).
  const bool model_valid = meta.expansion == 0 || IsPow2(meta.expansion);
  OpsRunner(meta, access, model_valid).Run(in);
  return 0;
}
