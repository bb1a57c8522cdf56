#include "server/util.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

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

void ReplyStatusError(resp::Writer& out, const storage::Status& status) {
  using storage::Code;
  switch (status.code()) {
    case Code::kWrongType:
      out.Error(kWrongTypeError);
      return;
    case Code::kNotFound:
    case Code::kExists:
    case Code::kInvalid:
      out.Error(status.message());
      return;
    case Code::kCorruption:
      spdlog::error("{}", status.message());
      out.Error("ERR " + status.message());
      return;
    case Code::kBusy:
    case Code::kIoError:
      spdlog::warn("{}", status.message());
      out.Error("ERR " + status.message());
      return;
    case Code::kOk:
      break;
  }
  out.Error("ERR internal error");
}

std::string ArityError(std::string_view name) {
  return "ERR wrong number of arguments for '" + std::string(name) + "' command";
}

}  // namespace cuckood::server
