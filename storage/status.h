// Status and StatusOr for storage results. No exceptions on the data path: every storage call
// returns one of these, and server/ turns the code and reason into reply text in one place.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace cuckood::storage {

enum class Code {
  kOk,
  kNotFound,    // the key does not exist (or is expired)
  kWrongType,   // the key holds another type
  kExists,      // the key exists where it must not
  kCorruption,  // a stored record is malformed (logged; the command writes nothing)
  kIoError,     // RocksDB failed (message names the cause)
  kBusy,        // write stall / no space: retry later
  kInvalid,     // invalid request (reason says which)
};

// The precise situation behind a failed Status, one value per distinct reply the server gives.
// server/ maps each value to its reply text (ErrorText in server/util.h); storage never words a
// reply. kNone: the code alone describes the failure (kWrongType, kIoError, kCorruption, kBusy).
enum class Reason {
  kNone,
  kFilterExists,           // CF.RESERVE / CF.LOADCHUNK header: the key already holds a filter
  kFilterNotFound,         // CF.INSERT NOCREATE, CF.INFO, CF.SCANDUMP, CF.LOADCHUNK chunk: no key
  kDelFilterNotFound,      // CF.DEL: no filter under the key (absent or another type)
  kCompactFilterNotFound,  // CF.COMPACT: no filter under the key (absent or another type)
  kCreateTooLarge,         // a new filter would exceed the size limit (cf-max-filter-bytes)
  kBadHeader,              // CF.LOADCHUNK header chunk of the wrong size
  kCreateFailed,           // CF.LOADCHUNK header chunk that does not describe a valid filter
  kBadChunk,               // CF.LOADCHUNK data chunk that does not fit the filter
  kBadDumpFormat,          // RESTORE: the payload does not decode, or the filter is too large
  kSameObject,             // COPY / MOVE onto the key itself
  kKeyNotFound,            // RENAME / DISK USAGE: the key does not exist
};

// A result: Ok, or a code (the category callers test), a reason (what the client is told) and a
// diagnostic message (logged; for kIoError / kCorruption / kBusy it names the RocksDB cause).
class [[nodiscard]] Status {
 public:
  Status() = default;
  explicit Status(Code code) : code_(code) {}
  Status(Code code, Reason reason) : code_(code), reason_(reason) {}
  Status(Code code, std::string diagnostic) : code_(code), msg_(std::move(diagnostic)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  Reason reason() const { return reason_; }
  // A diagnostic for logs, empty when the reason says it all; never reply text from storage.
  const std::string& message() const { return msg_; }

 private:
  Code code_ = Code::kOk;
  Reason reason_ = Reason::kNone;
  std::string msg_;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status s) : status_(std::move(s)) {}  // NOLINT: implicit by design
  StatusOr(T v) : value_(std::move(v)) {}        // NOLINT
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  T& operator*() { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace cuckood::storage
