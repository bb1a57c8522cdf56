#include "server/util.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "server/commands/cf_errors.h"

namespace cuckood::server {

std::optional<int64_t> ParseInt64(std::string_view s) {
  if (s.empty() || s.size() > 20) {
    return std::nullopt;
  }
  if (s.size() == 1 && s[0] == '0') {
    return 0;
  }
  size_t i = 0;
  bool negative = false;
  if (s[0] == '-') {
    negative = true;
    i = 1;
    if (s.size() == 1) {
      return std::nullopt;
    }
  }
  if (s[i] < '1' || s[i] > '9') {
    return std::nullopt;  // no leading zeros, no '+', no spaces
  }
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') {
      return std::nullopt;
    }
    uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) {
      return std::nullopt;
    }
    v = v * 10 + d;
  }
  if (negative) {
    if (v > static_cast<uint64_t>(INT64_MAX) + 1) {
      return std::nullopt;
    }
    return static_cast<int64_t>(0 - v);
  }
  if (v > static_cast<uint64_t>(INT64_MAX)) {
    return std::nullopt;
  }
  return static_cast<int64_t>(v);
}

std::optional<uint64_t> ParseUint64(std::string_view s) {
  auto v = ParseInt64(s);
  if (!v || *v < 0) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(*v);
}

std::optional<double> ParseDouble(std::string_view s) {
  if (s.empty() || s.size() > 256 || std::isspace(static_cast<unsigned char>(s[0]))) {
    return std::nullopt;
  }
  std::string tmp(s);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(tmp.c_str(), &end);
  if (end != tmp.c_str() + tmp.size() || errno == ERANGE || std::isnan(v)) {
    return std::nullopt;
  }
  return v;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string ToUpper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view ReasonText(storage::Reason reason) {
  using storage::Reason;
  switch (reason) {
    case Reason::kFilterExists:
      return kCfItemExists;
    case Reason::kFilterNotFound:
      return kCfNotFound;
    case Reason::kDelFilterNotFound:
      return kCfDelNotFound;
    case Reason::kCompactFilterNotFound:
      return kCfCompactNotFound;
    case Reason::kCreateTooLarge:
      return kCfCreateTooLarge;
    case Reason::kBadHeader:
      return kCfBadHeader;
    case Reason::kCreateFailed:
      return kCfCreateFailed;
    case Reason::kBadChunk:
      return kCfBadChunk;
    case Reason::kBadDumpFormat:
      return kBadDataFormatError;
    case Reason::kSameObject:
      return kSameObjectError;
    case Reason::kKeyNotFound:
      return kNoSuchKeyError;
    case Reason::kNone:
      break;
  }
  return {};
}

std::string ErrorText(const storage::Status& status) {
  using storage::Code;
  if (std::string_view text = ReasonText(status.reason()); !text.empty()) {
    return std::string(text);
  }
  switch (status.code()) {
    case Code::kWrongType:
      return std::string(kWrongTypeError);
    case Code::kNotFound:
    case Code::kExists:
    case Code::kInvalid:
      // Without a reason: a status made outside storage (cluster/) whose message is the reply.
      if (!status.message().empty()) {
        return status.message();
      }
      break;
    case Code::kCorruption:
    case Code::kBusy:
    case Code::kIoError:
      return "ERR " + status.message();
    case Code::kOk:
      break;
  }
  return "ERR internal error";
}

void ReplyStatusError(resp::Writer& out, const storage::Status& status) {
  switch (status.code()) {
    case storage::Code::kCorruption:
      spdlog::error("{}", status.message());
      break;
    case storage::Code::kBusy:
    case storage::Code::kIoError:
      spdlog::warn("{}", status.message());
      break;
    default:
      break;
  }
  out.Error(ErrorText(status));
}

std::string ArityError(std::string_view name) {
  return "ERR wrong number of arguments for '" + std::string(name) + "' command";
}

}  // namespace cuckood::server
