// The raw key-value data of a range of hash slots (slot migration): which raw keys belong to a
// slot, a snapshot of the range read in bounded write batches, write batches filtered down to
// the range (the WAL entries written since that snapshot), and dropping the range.
//
// A slot is a contiguous key range of the metadata and pages column families in every
// namespace (ns | slot | ...); rename aliases in the default column family carry the owner key,
// whose slot is the alias's slot (RENAME never crosses slots in cluster mode).
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "storage/status.h"

namespace cuckood::storage {

class Engine;

// Slots first..last, both inclusive.
struct SlotSpan {
  uint16_t first = 0;
  uint16_t last = 0;
  bool Contains(uint16_t slot) const { return slot >= first && slot <= last; }
};

enum class RawCf { kDefault, kMetadata, kPages };

// The slot of a raw key of a column family; nullopt for keys of no slot (the default column
// family's version record) and for keys too short to carry one.
std::optional<uint16_t> RawKeySlot(RawCf cf, std::string_view key);

// Copies into *out the operations of `in` on keys of span (puts, deletes, merges). Returns
// kInvalid when `in` holds a range delete (FLUSHDB), which cannot be split by slot, or
// kCorruption when it does not parse. *seen (optional) counts the operations of `in`.
Status FilterBatchBySlots(Engine* engine, const rocksdb::WriteBatch& in, SlotSpan span,
                          rocksdb::WriteBatch* out, size_t* seen = nullptr);

// Reads every record of span (metadata, pages, aliases; every namespace) from one snapshot, in
// batches of about max_bytes.
class SlotScanner {
 public:
  SlotScanner(Engine* engine, const rocksdb::Snapshot* snapshot, SlotSpan span);
  ~SlotScanner();
  // Fills *out (cleared first) with the next records; false when there are no more (or on an
  // error, then *status says so). keys counts the records added.
  bool Next(rocksdb::WriteBatch* out, size_t max_bytes, size_t* keys, Status* status);

 private:
  bool Advance();  // positions it_ on the next record of span in the current phase
  void StartPhase();

  Engine* engine_;
  const rocksdb::Snapshot* snapshot_;
  SlotSpan span_;
  int phase_ = 0;  // 0 metadata, 1 pages, 2 default (aliases), 3 done
  std::unique_ptr<rocksdb::Iterator> it_;
};

}  // namespace cuckood::storage
