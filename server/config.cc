#include "server/config.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "server/config_syntax.h"

namespace cuckood::server {
namespace {

constexpr std::string_view kVersionText = "cuckood v0.1.0";
constexpr int kMaxIncludeDepth = 16;
// Escapes inside "double quotes": the letter after the backslash and the character it stands for.
constexpr std::string_view kEscapeLetters = "nrtba";
constexpr std::string_view kEscapeChars = "\n\r\t\b\a";
constexpr int64_t kInt64Max = INT64_MAX;
constexpr uint64_t kMiB = 1ULL << 20;

// CONFIG SET error texts, worded as Redis words them.
constexpr std::string_view kNotMemory = "argument must be a memory value";
constexpr std::string_view kNotInteger = "argument couldn't be parsed into an integer";
constexpr std::string_view kNotBool = "argument must be 'yes' or 'no'";
constexpr std::string_view kBadDirective = "Bad directive or wrong number of arguments";
constexpr std::string_view kBufferLimitClass =
    "Invalid client class specified in buffer limit configuration.";
constexpr std::string_view kBufferLimitValues =
    "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
constexpr std::string_view kBufferLimitArgs =
    "Wrong number of arguments in buffer limit configuration.";

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f';
}

std::string RangeError(int64_t lo, int64_t hi) {
  return "argument must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
         " inclusive";
}

// Strict integer: optional '-', digits, nothing else (no '+', no spaces).
std::optional<int64_t> ParseInteger(std::string_view s) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || ptr != end) {
    return std::nullopt;
  }
  return v;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// Splits a line into arguments the way Redis config lines are split: whitespace separates,
// "double quotes" take C escapes (\n \r \t \b \a \\ \" \xHH), 'single quotes' take only \'.
// A closing quote must be followed by whitespace or the end. Returns nullopt on bad quoting.
std::optional<std::vector<std::string>> SplitArgs(std::string_view line) {
  std::vector<std::string> args;
  size_t i = 0;
  while (true) {
    while (i < line.size() && IsSpace(line[i])) {
      ++i;
    }
    if (i == line.size()) {
      return args;
    }
    std::string arg;
    const char quote = line[i];
    if (quote == '"' || quote == '\'') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        char c = line[i++];
        if (c == quote) {
          closed = true;
          break;
        }
        if (c == '\\' && i < line.size() && quote == '\'') {
          if (line[i] == '\'') {
            c = line[i++];
          }
        } else if (c == '\\' && i < line.size()) {
          const char e = line[i++];
          if (e == 'x' && i + 1 < line.size() && HexValue(line[i]) >= 0 &&
              HexValue(line[i + 1]) >= 0) {
            c = static_cast<char>(HexValue(line[i]) * 16 + HexValue(line[i + 1]));
            i += 2;
          } else {
            // \n \r \t \b \a become control characters; any other escaped character is itself.
            const size_t k = kEscapeLetters.find(e);
            c = k == std::string_view::npos ? e : kEscapeChars[k];
          }
        }
        arg.push_back(c);
      }
      if (!closed || (i < line.size() && !IsSpace(line[i]))) {
        return std::nullopt;
      }
    } else {
      while (i < line.size() && !IsSpace(line[i])) {
        arg.push_back(line[i++]);
      }
    }
    args.push_back(std::move(arg));
  }
}

// Inverse of SplitArgs for one argument: plain when safe, otherwise double-quoted.
std::string QuoteArg(const std::string& s) {
  const bool plain = !s.empty() && std::none_of(s.begin(), s.end(), [](char c) {
    return IsSpace(c) || c == '"' || c == '\'' || c == '\\' ||
           !std::isprint(static_cast<unsigned char>(c));
  });
  if (plain) {
    return s;
  }
  std::string out = "\"";
  for (char c : s) {
    const size_t k = kEscapeChars.find(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (k != std::string_view::npos) {
      out += '\\';
      out += kEscapeLetters[k];
    } else if (std::isprint(static_cast<unsigned char>(c))) {
      out += c;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      const auto u = static_cast<unsigned char>(c);
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out + "\"";
}

// The single value handed to OptionRow::set for a directive's arguments: one argument is passed
// as it is; several are re-quoted so that multi-value setters can split them again.
std::string JoinArgs(const std::vector<std::string>& args) {
  if (args.size() == 1) {
    return args[0];
  }
  std::string out;
  for (const auto& a : args) {
    out += (out.empty() ? "" : " ") + QuoteArg(a);
  }
  return out;
}

// How many arguments a directive takes in a file or on the command line.
std::pair<size_t, size_t> ArgCount(const std::string& name) {
  if (name == "bind") {
    return {1, 16};
  }
  if (name == "rename-command") {
    return {2, 2};
  }
  if (name == "replicaof" || name == "slaveof") {
    return {1, 2};
  }
  if (name == "client-output-buffer-limit") {
    return {1, 16};  // one byte size, or up to four "class hard soft seconds" groups
  }
  return {1, 1};
}

// ---- row builders ------------------------------------------------------------------------------

template <typename T>
OptionRow IntRow(std::string name, std::string description, bool mut, T Config::*field, int64_t lo,
                 int64_t hi) {
  return OptionRow{std::move(name), std::move(description), mut,
                   [field](const Config& c) { return std::to_string(c.*field); },
                   [field, lo, hi](Config& c, const std::string& v) -> std::optional<std::string> {
                     auto n = ParseInteger(v);
                     if (!n) {
                       return std::string(kNotInteger);
                     }
                     if (*n < lo || *n > hi) {
                       return RangeError(lo, hi);
                     }
                     c.*field = static_cast<T>(*n);
                     return std::nullopt;
                   }};
}

OptionRow MemoryRow(std::string name, std::string description, bool mut, uint64_t Config::*field,
                    uint64_t lo, uint64_t hi) {
  return OptionRow{std::move(name), std::move(description), mut,
                   [field](const Config& c) { return std::to_string(c.*field); },
                   [field, lo, hi](Config& c, const std::string& v) -> std::optional<std::string> {
                     auto n = ParseMemory(v);
                     if (!n) {
                       return std::string(kNotMemory);
                     }
                     if (*n < lo || *n > hi) {
                       return RangeError(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
                     }
                     c.*field = *n;
                     return std::nullopt;
                   }};
}

OptionRow BoolRow(std::string name, std::string description, bool mut, bool Config::*field) {
  return OptionRow{std::move(name), std::move(description), mut,
                   [field](const Config& c) { return std::string(c.*field ? "yes" : "no"); },
                   [field](Config& c, const std::string& v) -> std::optional<std::string> {
                     const std::string l = Lower(v);
                     if (l != "yes" && l != "no") {
                       return std::string(kNotBool);
                     }
                     c.*field = l == "yes";
                     return std::nullopt;
                   }};
}

OptionRow EnumRow(std::string name, std::string description, bool mut, std::string Config::*field,
                  std::vector<std::string> choices) {
  return OptionRow{std::move(name), std::move(description), mut,
                   [field](const Config& c) { return c.*field; },
                   [field, choices](Config& c, const std::string& v) -> std::optional<std::string> {
                     const std::string l = Lower(v);
                     if (std::find(choices.begin(), choices.end(), l) == choices.end()) {
                       std::string msg = "argument(s) must be one of the following: ";
                       for (size_t i = 0; i < choices.size(); ++i) {
                         msg += (i ? ", " : "") + choices[i];
                       }
                       return msg;
                     }
                     c.*field = l;
                     return std::nullopt;
                   }};
}

OptionRow StringRow(std::string name, std::string description, bool mut, std::string Config::*field,
                    bool allow_empty = true) {
  return OptionRow{
      std::move(name), std::move(description), mut, [field](const Config& c) { return c.*field; },
      [field, allow_empty](Config& c, const std::string& v) -> std::optional<std::string> {
        if (!allow_empty && v.empty()) {
          return std::string("argument must not be empty");
        }
        c.*field = v;
        return std::nullopt;
      }};
}

// ---- rows with their own syntax ----------------------------------------------------------------

OptionRow BindRow() {
  return OptionRow{"bind", "Addresses to listen on, separated by spaces ('*' = every IPv4 address)",
                   false, [](const Config& c) { return c.bind; },
                   [](Config& c, const std::string& v) -> std::optional<std::string> {
                     auto args = SplitArgs(v);
                     if (!args || args->empty()) {
                       return std::string("argument must be one or more addresses");
                     }
                     if (args->size() > 16) {
                       return std::string("Too many bind addresses specified.");
                     }
                     std::string joined;
                     for (const auto& a : *args) {
                       joined += (joined.empty() ? "" : " ") + a;
                     }
                     c.bind = joined;
                     return std::nullopt;
                   }};
}

// Accepts one byte size (the normal class's hard limit), or Redis's "class hard soft seconds"
// groups: the normal class's hard limit and the pubsub class's three values are kept (the
// replica class is accepted and ignored).
std::optional<std::string> SetOutputBufferLimit(Config& c, const std::string& v) {
  auto args = SplitArgs(v);
  if (!args || args->empty()) {
    return std::string(kBufferLimitArgs);
  }
  if (args->size() == 1) {
    auto n = ParseMemory((*args)[0]);
    if (!n) {
      return std::string(kNotMemory);
    }
    c.client_output_buffer_limit = *n;
    return std::nullopt;
  }
  if (args->size() % 4 != 0) {
    return std::string(kBufferLimitArgs);
  }
  std::optional<uint64_t> normal;
  struct ClassLimit {
    uint64_t hard, soft;
    int64_t seconds;
  };
  std::optional<ClassLimit> pubsub;
  for (size_t i = 0; i < args->size(); i += 4) {
    const std::string cls = Lower((*args)[i]);
    if (cls != "normal" && cls != "replica" && cls != "slave" && cls != "pubsub") {
      return std::string(kBufferLimitClass);
    }
    auto hard = ParseMemory((*args)[i + 1]);
    auto soft = ParseMemory((*args)[i + 2]);
    auto secs = ParseInteger((*args)[i + 3]);
    if (!hard || !soft || !secs || *secs < 0) {
      return std::string(kBufferLimitValues);
    }
    if (cls == "normal") {
      normal = *hard;
    } else if (cls == "pubsub") {
      pubsub = {*hard, *soft, *secs};
    }
  }
  if (normal) {
    c.client_output_buffer_limit = *normal;
  }
  if (pubsub) {
    c.pubsub_output_hard_limit = pubsub->hard;
    c.pubsub_output_soft_limit = pubsub->soft;
    c.pubsub_output_soft_seconds = pubsub->seconds;
  }
  return std::nullopt;
}

// Redis's form, limited to the classes cuckood keeps.
std::string GetOutputBufferLimit(const Config& c) {
  return "normal " + std::to_string(c.client_output_buffer_limit) + " 0 0 pubsub " +
         std::to_string(c.pubsub_output_hard_limit) + " " +
         std::to_string(c.pubsub_output_soft_limit) + " " +
         std::to_string(c.pubsub_output_soft_seconds);
}

// Each pair adds a rename, replacing an earlier rename of the same command. Stored as
// "name newname" with one space; an empty newname disables the command.
OptionRow RenameRow() {
  return OptionRow{
      "rename-command",
      "Renames a command (rename-command NAME NEWNAME); an empty new name disables it", false,
      [](const Config& c) {
        std::string out;
        for (const auto& rc : c.rename_commands) {
          const auto sp = rc.find(' ');
          const std::string to = sp == std::string::npos ? "" : rc.substr(sp + 1);
          out += (out.empty() ? "" : " ") + QuoteArg(rc.substr(0, sp)) + " " + QuoteArg(to);
        }
        return out;
      },
      [](Config& c, const std::string& v) -> std::optional<std::string> {
        auto args = SplitArgs(v);
        if (!args || args->empty() || args->size() % 2 != 0) {
          return std::string("wrong number of arguments");
        }
        for (size_t i = 0; i < args->size(); i += 2) {
          const std::string& from = (*args)[i];
          if (from.empty() || from.find(' ') != std::string::npos ||
              (*args)[i + 1].find(' ') != std::string::npos) {
            return std::string("command names must be non-empty words");
          }
          auto& list = c.rename_commands;
          list.erase(std::remove_if(list.begin(), list.end(),
                                    [&](const std::string& rc) {
                                      return Lower(rc.substr(0, rc.find(' '))) == Lower(from);
                                    }),
                     list.end());
          list.push_back(from + " " + (*args)[i + 1]);
        }
        return std::nullopt;
      }};
}

// replicaof "host port" (or "no one" / empty: a primary).
OptionRow ReplicaOfRow() {
  return OptionRow{
      "replicaof", "Replicate from this primary (replicaof HOST PORT); empty = a primary", true,
      [](const Config& c) { return c.replicaof; },
      [](Config& c, const std::string& v) -> std::optional<std::string> {
        auto args = SplitArgs(v);
        if (!args || args->size() > 2 || args->size() == 1) {
          if (args && args->size() == 1 && args->front().empty()) {
            c.replicaof.clear();
            return std::nullopt;
          }
          return std::string("wrong number of arguments");
        }
        if (args->empty() || (Lower((*args)[0]) == "no" && Lower((*args)[1]) == "one")) {
          c.replicaof.clear();
          return std::nullopt;
        }
        auto port = ParseInteger((*args)[1]);
        if (!port || *port < 1 || *port > 65535 || (*args)[0].empty() ||
            (*args)[0].find(' ') != std::string::npos) {
          return std::string("Invalid master port");
        }
        c.replicaof = (*args)[0] + " " + std::to_string(*port);
        return std::nullopt;
      }};
}

// RedisBloom's lower bound for a filter's capacity is twice the bucket size.
OptionRow CfInitialSizeRow() {
  return OptionRow{
      "cf-initial-size",
      "Capacity of a filter created implicitly by CF.ADD/CF.INSERT (at least 2 x cf-bucket-size)",
      true, [](const Config& c) { return std::to_string(c.cf_initial_size); },
      [](Config& c, const std::string& v) -> std::optional<std::string> {
        auto n = ParseInteger(v);
        if (!n) {
          return std::string(kNotInteger);
        }
        const auto lo = static_cast<int64_t>(2 * c.cf_bucket_size);
        constexpr int64_t kHi = 1LL << 30;
        if (*n < lo || *n > kHi) {
          return RangeError(lo, kHi);
        }
        c.cf_initial_size = static_cast<uint64_t>(*n);
        return std::nullopt;
      }};
}

// A row with what the running server does when the option changes (see OptionEffect).
OptionRow WithEffect(OptionRow row, OptionEffect effect) {
  row.effect = effect;
  return row;
}

std::vector<OptionRow> BuildTable() {
  using C = Config;
  std::vector<OptionRow> t;
  t.push_back(BindRow());
  t.push_back(IntRow("port", "TCP port to listen on", false, &C::port, 0, 65535));
  t.push_back(IntRow("tls-port", "TLS port to listen on (same addresses as port); 0 = no TLS",
                     false, &C::tls_port, 0, 65535));
  t.push_back(StringRow("tls-cert-file", "Server certificate (PEM, may hold the chain) for TLS",
                        false, &C::tls_cert_file));
  t.push_back(
      StringRow("tls-key-file", "Private key (PEM) of tls-cert-file", false, &C::tls_key_file));
  t.push_back(StringRow("tls-ca-cert-file",
                        "CA certificates (PEM) that client certificates are "
                        "checked against",
                        false, &C::tls_ca_cert_file));
  t.push_back(EnumRow("tls-auth-clients",
                      "TLS clients must present a certificate signed by "
                      "tls-ca-cert-file: yes, no, optional (checked if presented)",
                      false, &C::tls_auth_clients, {"yes", "no", "optional"}));
  t.push_back(StringRow("dir", "Directory of the RocksDB database", false, &C::dir, false));
  t.push_back(IntRow("workers", "I/O threads; 0 = one per core", false, &C::workers, 0, 1024));
  t.push_back(StringRow("requirepass", "Password clients must AUTH with; empty = none", true,
                        &C::requirepass));
  t.push_back(BoolRow("protected-mode",
                      "Without a password, accept only loopback clients when bound to all "
                      "interfaces",
                      true, &C::protected_mode));
  t.push_back(EnumRow("enable-debug-command",
                      "Who may run DEBUG: yes, no, local (loopback clients only)", false,
                      &C::enable_debug_command, {"yes", "no", "local"}));
  t.push_back(
      WithEffect(EnumRow("appendfsync",
                         "WAL sync policy: always (every write), everysec (once a second), no (OS)",
                         true, &C::appendfsync, {"always", "everysec", "no"}),
                 OptionEffect::kFsync));
  t.push_back(IntRow("maxclients", "Maximum number of connected clients", true, &C::maxclients, 1,
                     INT_MAX));
  t.push_back(IntRow("timeout", "Close a client after this many idle seconds; 0 = never", true,
                     &C::timeout, 0, INT_MAX));
  t.push_back(IntRow("tcp-keepalive", "TCP keepalive interval in seconds; 0 = off", true,
                     &C::tcp_keepalive, 0, INT_MAX));
  t.push_back(WithEffect(EnumRow("loglevel", "Log verbosity", true, &C::loglevel,
                                 {"debug", "verbose", "notice", "warning"}),
                         OptionEffect::kLogLevel));
  t.push_back(StringRow("logfile", "Log file; empty = standard output", false, &C::logfile));
  t.push_back(IntRow("databases", "Number of databases (SELECT 0..databases-1)", false,
                     &C::databases, 1, 65535));
  t.push_back(MemoryRow("proto-max-bulk-len", "Largest bulk string a client may send", true,
                        &C::proto_max_bulk_len, kMiB, kInt64Max));
  t.push_back(MemoryRow("client-query-buffer-limit", "Largest query buffer of one client", true,
                        &C::client_query_buffer_limit, kMiB, kInt64Max));
  t.push_back(
      WithEffect(OptionRow{"client-output-buffer-limit",
                           "Hard limit of a client's pending output in bytes; 0 = none (Redis's "
                           "'class hard soft seconds' form is accepted too: normal and pubsub)",
                           true, GetOutputBufferLimit, SetOutputBufferLimit},
                 OptionEffect::kHotSettings));
  t.push_back(
      WithEffect(BoolRow("group-commit",
                         "Pipelined filter writes of a connection share one RocksDB write (one WAL "
                         "append and sync); replies wait for it",
                         true, &C::group_commit),
                 OptionEffect::kHotSettings));
  t.push_back(WithEffect(
      BoolRow(
          "combine-commands",
          "A connection's pipelined calls of CF.ADD, CF.ADDNX, CF.EXISTS or CF.COUNT on one key "
          "that follow one another run as one insert (lookup) of their items: the same "
          "replies, data and statistics as one by one",
          true, &C::combine_commands),
      OptionEffect::kHotSettings));
  t.push_back(WithEffect(
      BoolRow("key-affinity",
              "A connection whose writes keep finding their key held by another io thread moves "
              "to the io thread that key belongs to (and back once it has neither contended nor "
              "written that key for 5 seconds), so that one key's writers share its lock batches "
              "and write groups",
              true, &C::key_affinity),
      OptionEffect::kHotSettings));
  t.push_back(WithEffect(
      BoolRow("adaptive-io-threads",
              "While the io threads wait for CPUs that other processes share (clients on the same "
              "cores) and sleep every few commands, connections gather on fewer io threads; one "
              "more is used again when the busiest one runs most of the time and a core is idle",
              true, &C::adaptive_io_threads),
      OptionEffect::kHotSettings));
  t.push_back(BoolRow("malloc-huge-pages",
                      "glibc's malloc keeps one arena and asks for transparent huge pages for it "
                      "(GLIBC_TUNABLES, set by the server starting itself again once): the "
                      "in-memory cache is read at random over hundreds of MiB",
                      false, &C::malloc_huge_pages));
  t.push_back(MemoryRow("block-cache-size", "RocksDB block cache size", false, &C::block_cache_size,
                        kMiB, kInt64Max));
  t.push_back(MemoryRow("write-buffer-size", "RocksDB memtable size", false, &C::write_buffer_size,
                        kMiB, kInt64Max));
  t.push_back(EnumRow("memtable",
                      "Memtable of the pages: pages (entries grouped by page, found by hash), "
                      "skiplist (RocksDB's default)",
                      false, &C::memtable, {"pages", "skiplist"}));
  t.push_back(MemoryRow("cache-size",
                        "In-memory cache of filter pages and metadata in front of RocksDB; 0 = "
                        "none",
                        false, &C::cache_size, 0, kInt64Max));
  t.push_back(MemoryRow("chain-index-memory",
                        "Memory for the indexes of filters with long chains of equal sub-filters "
                        "(lookups and inserts without a pass over the chain); 0 = none",
                        false, &C::chain_index_memory, 0, kInt64Max));
  t.push_back(
      WithEffect(IntRow("slowlog-log-slower-than",
                        "Log commands slower than this many microseconds; -1 = off, 0 = all", true,
                        &C::slowlog_log_slower_than, -1, kInt64Max),
                 OptionEffect::kHotSettings));
  t.push_back(WithEffect(IntRow("slowlog-max-len", "Entries kept in the slow log", true,
                                &C::slowlog_max_len, 0, kInt64Max),
                         OptionEffect::kHotSettings));
  t.push_back(IntRow("latency-monitor-threshold",
                     "Record latency events of at least this many milliseconds; 0 = off", true,
                     &C::latency_monitor_threshold, 0, kInt64Max));
  t.push_back(RenameRow());
  t.push_back(
      StringRow("pidfile", "Write the process id to this file; empty = none", false, &C::pidfile));
  t.push_back(WithEffect(CfInitialSizeRow(), OptionEffect::kHotSettings));
  t.push_back(WithEffect(
      IntRow("cf-bucket-size", "Default fingerprints per bucket", true, &C::cf_bucket_size, 1, 255),
      OptionEffect::kHotSettings));
  t.push_back(
      WithEffect(IntRow("cf-max-iterations", "Default cuckoo kicks before a filter counts as full",
                        true, &C::cf_max_iterations, 1, 65535),
                 OptionEffect::kHotSettings));
  t.push_back(
      WithEffect(IntRow("cf-expansion-factor",
                        "Default growth factor of a new sub-filter; 0 = the filter does not grow",
                        true, &C::cf_expansion_factor, 0, 32768),
                 OptionEffect::kHotSettings));
  t.push_back(WithEffect(IntRow("cf-max-expansions", "Maximum number of sub-filters of a filter",
                                true, &C::cf_max_expansions, 1, 65536),
                         OptionEffect::kHotSettings));
  t.push_back(
      WithEffect(EnumRow("cf-sizing",
                         "How capacities become bucket counts: redisbloom (byte-compatible) or "
                         "load-factor",
                         true, &C::cf_sizing, {"redisbloom", "load-factor"}),
                 OptionEffect::kHotSettings));
  t.push_back(WithEffect(MemoryRow("cf-page-size", "Bytes of filter data per RocksDB value", false,
                                   &C::cf_page_size, 64, kMiB),
                         OptionEffect::kHotSettings));
  t.push_back(
      WithEffect(MemoryRow("cf-max-filter-bytes",
                           "Largest size of one sub-filter in bytes (larger ones are refused as "
                           "RedisBloom refuses a failed allocation)",
                           true, &C::cf_max_filter_bytes, kMiB, 1ULL << 40),
                 OptionEffect::kHotSettings));
  t.push_back(BoolRow("cluster-enabled",
                      "Cluster mode: serve the hash slots a controller assigns with CLUSTERX "
                      "SETNODES and redirect the others (MOVED)",
                      false, &C::cluster_enabled));
  t.push_back(StringRow("cluster-config-file",
                        "Nodes file of cluster mode in dir (node id, topology version and "
                        "topology), rewritten by CLUSTERX commands",
                        false, &C::cluster_config_file, false));
  t.push_back(IntRow("cluster-import-timeout",
                     "Seconds a slot import waits for the next batch of its source before it "
                     "ends in fail and drops what arrived",
                     true, &C::cluster_import_timeout, 1, 3600));
  t.push_back(ReplicaOfRow());
  t.push_back(StringRow("masterauth", "Password this replica sends to its primary (AUTH)", true,
                        &C::masterauth));
  t.push_back(StringRow("masteruser", "User name this replica sends with masterauth", true,
                        &C::masteruser));
  {
    auto row = BoolRow("replica-read-only",
                       "Replicas refuse writes (-READONLY); they apply their primary's WAL as it "
                       "is, so only yes is accepted",
                       true, &C::replica_read_only);
    auto set = row.set;
    row.set = [set](Config& c, const std::string& v) -> std::optional<std::string> {
      if (auto err = set(c, v)) {
        return err;
      }
      if (!c.replica_read_only) {
        c.replica_read_only = true;
        return std::string(
            "writable replicas are not supported (a replica applies its primary's WAL as it is)");
      }
      return std::nullopt;
    };
    t.push_back(std::move(row));
  }
  t.push_back(StringRow("replica-announce-ip",
                        "Address this replica gives its primary to show in INFO (for Sentinel); "
                        "empty = the address the primary sees",
                        true, &C::replica_announce_ip));
  t.push_back(IntRow("replica-announce-port",
                     "Port this replica gives its primary to show in INFO; 0 = the port option",
                     true, &C::replica_announce_port, 0, 65535));
  t.push_back(IntRow("replica-priority",
                     "Sentinel promotes replicas with lower numbers first; 0 = never", true,
                     &C::replica_priority, 0, 2147483647));
  t.push_back(BoolRow("replica-announced", "Sentinel lists this replica (INFO replica_announced)",
                      true, &C::replica_announced));
  t.push_back(MemoryRow("repl-backlog-size",
                        "WAL bytes kept for replicas that fall behind (beyond it they get a "
                        "full sync)",
                        false, &C::repl_backlog_size, kMiB, kInt64Max));
  t.push_back(IntRow("repl-backlog-ttl",
                     "Seconds the WAL is kept for replicas that fall behind; 0 = not kept", false,
                     &C::repl_backlog_ttl, 0, kInt64Max));
  t.push_back(WithEffect(
      IntRow("repl-timeout", "Seconds without traffic before a replication link counts as broken",
             true, &C::repl_timeout, 1, 3600),
      OptionEffect::kReplication));
  t.push_back(
      WithEffect(MemoryRow("repl-sync-rate",
                           "Bytes a second a primary sends a full sync at most; 0 = no limit", true,
                           &C::repl_sync_rate, 0, kInt64Max),
                 OptionEffect::kReplication));
  return t;
}

std::string Trim(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && IsSpace(s[b])) {
    ++b;
  }
  while (e > b && IsSpace(s[e - 1])) {
    --e;
  }
  return std::string(s.substr(b, e - b));
}

std::optional<std::string> LoadInto(const std::string& path, Config& cfg, int depth) {
  if (depth > kMaxIncludeDepth) {
    return path + ": include nesting is deeper than " + std::to_string(kMaxIncludeDepth);
  }
  std::ifstream in(path);
  if (!in) {
    return "cannot open config file '" + path + "': " + std::strerror(errno);
  }
  std::string raw;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    const std::string line = Trim(raw);
    if (line.empty() || line[0] == '#') {
      continue;
    }
    auto fail = [&](std::string_view msg) {
      return path + ":" + std::to_string(line_no) + ": " + std::string(msg) + " (>>> '" + line +
             "')";
    };
    auto args = SplitArgs(line);
    if (!args) {
      return fail("Unbalanced quotes in configuration line");
    }
    const std::string name = Lower((*args)[0]);
    args->erase(args->begin());
    if (name == "include") {
      if (args->size() != 1) {
        return fail(kBadDirective);
      }
      std::filesystem::path inc((*args)[0]);
      if (inc.is_relative()) {
        inc = std::filesystem::path(path).parent_path() / inc;
      }
      if (auto err = LoadInto(inc.string(), cfg, depth + 1)) {
        return fail(*err);
      }
      continue;
    }
    const OptionRow* row = FindOption(name);
    const auto [lo, hi] = ArgCount(name);
    if (row == nullptr || args->size() < lo || args->size() > hi) {
      return fail(kBadDirective);
    }
    if (auto err = row->set(cfg, JoinArgs(*args))) {
      return fail("'" + row->name + "' " + *err);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<std::string>> SplitConfigArgs(std::string_view line) {
  return SplitArgs(line);
}

std::string QuoteConfigArg(const std::string& arg) {
  return QuoteArg(arg);
}

std::pair<size_t, size_t> ConfigArgCount(const std::string& name) {
  return ArgCount(name);
}

const std::vector<OptionRow>& OptionTable() {
  static const std::vector<OptionRow> table = BuildTable();
  return table;
}

const OptionRow* FindOption(const std::string& name) {
  std::string l = Lower(name);
  if (l == "slaveof") {
    l = "replicaof";  // (Redis's older name)
  }
  for (const auto& row : OptionTable()) {
    if (row.name == l) {
      return &row;
    }
  }
  return nullptr;
}

std::optional<std::string> LoadConfigFile(const std::string& path, Config* cfg) {
  // Changes reach *cfg only when the whole file (and its includes) is valid.
  Config next = *cfg;
  if (auto err = LoadInto(path, next, 0)) {
    return err;
  }
  *cfg = std::move(next);
  return std::nullopt;
}

bool ParseCommandLine(int argc, char** argv, Config* cfg, int* exit_code, bool* check_mode) {
  return ParseCommandLine(argc, argv, cfg, exit_code, check_mode, nullptr);
}

bool ParseCommandLine(int argc, char** argv, Config* cfg, int* exit_code, bool* check_mode,
                      std::string* config_file, bool* compact_mode) {
  CLI::App app{"cuckood: a Redis-protocol server for RedisBloom-compatible cuckoo filters",
               "cuckood"};
  app.set_version_flag("-v,--version", std::string(kVersionText));
  std::string flag_file;
  std::string positional_file;
  bool check = false;
  app.add_option("--config", flag_file, "Read options from this file first (flags win)");
  app.add_option("config-file", positional_file, "Config file, as with --config");
  app.add_flag("--check", check, "Check the database offline for consistency and exit");
  bool compact = false;
  app.add_flag("--compact", compact,
               "Compact the database offline (RocksDB's full compaction, which also drops the "
               "pages of deleted filters) and exit; the server must not be running");

  const Config defaults;
  std::vector<std::pair<const OptionRow*, CLI::Option*>> options;
  for (const auto& row : OptionTable()) {
    std::string names = "--" + row.name;
    if (row.name == "loglevel") {
      names += ",--log-level";
    }
    const auto [lo, hi] = ArgCount(row.name);
    CLI::Option* opt =
        app.add_option(names)
            ->type_name(row.name == "rename-command" ? "NAME NEWNAME" : "VALUE")
            ->description(row.description)
            ->expected(static_cast<int>(lo), static_cast<int>(hi))
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
            ->default_str(row.get(defaults))
            ->group(row.name.rfind("cf-", 0) == 0 ? "Cuckoo filter options" : "Server options");
    options.emplace_back(&row, opt);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    *exit_code = app.exit(e, std::cout, std::cerr);
    return false;
  } catch (const CLI::ParseError& e) {
    throw std::runtime_error(std::string(e.what()) + " (run with --help for the options)");
  }

  if (!flag_file.empty() && !positional_file.empty() && flag_file != positional_file) {
    throw std::runtime_error("two config files given: '" + positional_file + "' and '" + flag_file +
                             "'");
  }
  const std::string file = flag_file.empty() ? positional_file : flag_file;
  if (!file.empty()) {
    if (auto err = LoadConfigFile(file, cfg)) {
      throw std::runtime_error(*err);
    }
  }
  for (const auto& [row, opt] : options) {
    const std::vector<std::string>& results = opt->results();
    if (results.empty()) {
      continue;
    }
    std::vector<std::string> values = results;
    if (ArgCount(row->name).second == 1) {
      values = {results.back()};  // a repeated flag: the last one wins, as in a file
    }
    if (auto err = row->set(*cfg, JoinArgs(values))) {
      throw std::runtime_error("--" + row->name + ": " + *err);
    }
  }
  *exit_code = 0;
  if (check_mode != nullptr) {
    *check_mode = check;
  }
  if (config_file != nullptr) {
    *config_file = file;
  }
  if (compact_mode != nullptr) {
    *compact_mode = compact;
  }
  return true;
}

std::optional<uint64_t> ParseMemory(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
    ++digits;
  }
  if (digits == 0) {
    return std::nullopt;
  }
  // Redis's units: k, m, g are powers of 1000; kb, mb, gb powers of 1024.
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"", 1},        {"b", 1},           {"k", 1000},       {"kb", 1024},
      {"m", 1000000}, {"mb", 1ULL << 20}, {"g", 1000000000}, {"gb", 1ULL << 30}};
  const std::string unit = Lower(std::string_view(text).substr(digits));
  uint64_t mul = 0;
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) {
      mul = factor;
    }
  }
  if (mul == 0) {
    return std::nullopt;
  }
  uint64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, n);
  if (ec != std::errc() || n > UINT64_MAX / mul) {
    return std::nullopt;
  }
  return n * mul;
}

}  // namespace cuckood::server
