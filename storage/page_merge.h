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

#include <memory>
#include <string>
#include <string_view>

namespace cuckood::storage {

// Whether every byte of s is 0 (a page that is not stored: it reads as zeros).
bool AllZeroBytes(std::string_view s);

// Builds the operand that turns `before` into `after` (same length). Returns false when a whole
// page is cheaper to write than the runs (the caller then Puts `after`).
bool EncodePageDelta(std::string_view before, std::string_view after, std::string* operand);

std::shared_ptr<rocksdb::MergeOperator> NewPageMergeOperator();

}  // namespace cuckood::storage
