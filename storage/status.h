// Status and StatusOr for storage results. No exceptions on the data path: every storage call
// returns one of these, and server/ turns the code into reply text in one place.
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
  kInvalid,     // invalid request (message is the reply text)
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string msg) : code_(code), msg_(std::move(msg)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return msg_; }

 private:
  Code code_ = Code::kOk;
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
