// The merge operator of the `pages` column family: a command writes only the bytes it changed in
// a page (a few bytes for CF.ADD) instead of the whole 2 KiB page, which keeps the WAL and the
// memtables small; RocksDB applies the changes on read and folds them away in compaction.
//
// Operand (little-endian): u32 page length, then runs of (u32 offset, u16 length, bytes).
// A missing page is zeros of the operand's page length. An operand whose page length differs
// from the stored page, or a run outside the page, fails the merge: RocksDB reports corruption
// and the command that read the page writes nothing.
#pragma once

#include <rocksdb/merge_operator.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace cuckood::storage {

// Whether every byte of s is 0 (a page that is not stored: it reads as zeros).
bool AllZeroBytes(std::string_view s);
// The same for a page of which these bytes were just written (ranges as below): a set byte
// among them decides at once (an insert writes a fingerprint); otherwise the page is read whole.
struct PageRange;
bool AllZeroBytes(std::string_view page, std::span<const PageRange> written);
// Whether two pages of one length hold the same bytes in these ranges (the only bytes written
// since one was copied from the other).
bool SameBytes(std::string_view a, std::string_view b, std::span<const PageRange> written);

// Builds the operand that turns `before` into `after` (same length). Returns false when a whole
// page is cheaper to write than the runs (the caller then Puts `after`). When the two are equal
// the operand has no run: PageDeltaIsEmpty.
bool EncodePageDelta(std::string_view before, std::string_view after, std::string* operand);
// Bytes [offset, offset + length) of a page.
struct PageRange {
  uint32_t offset;
  uint32_t length;
};
// Builds the operand that writes the bytes of `page` in these ranges (which may overlap and come
// in any order; they are sorted in place). Returns false when a whole page is cheaper to write
// than the runs, as EncodePageDelta does.
bool EncodePageRanges(std::string_view page, std::span<PageRange> ranges, std::string* operand);
// Whether an operand EncodePageDelta built changes nothing (its page length and no run).
inline bool PageDeltaIsEmpty(const std::string& operand) {
  return operand.size() <= 4;
}

std::shared_ptr<rocksdb::MergeOperator> NewPageMergeOperator();

}  // namespace cuckood::storage
