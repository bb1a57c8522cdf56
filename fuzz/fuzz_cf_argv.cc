// CF.* argument parsing and execution end to end: fuzzed argv through the real dispatcher of a
// Server over RocksDB in a temporary folder (listening on a free loopback port, but no client
// ever connects). Opt-in (CUCKOOD_FUZZ_SERVER=ON, `FUZZ_SERVER=1 scripts/fuzz.sh`): it compiles
// the whole server and storage with the fuzzer's instrumentation, which takes minutes.
//
// Input: a sequence of commands. Each is a command byte (a CF command, or a few others that
// make keys of another type), a key chosen from three, then up to 8 arguments, each either a
// keyword / number from a table or raw bytes from the input. After the input, the keys are
// deleted, so every input starts from an empty database.
//
// Invariants: no crash or sanitizer report; every command gets exactly one well-formed RESP2
// reply, and an error reply never carries RocksDB's "Invalid argument:" style text.
// Replay a finding with CUCKOOD_FUZZ_VERBOSE=1 build-fuzz/fuzz_cf_argv <file> to see the session.
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "resp/writer.h"
#include "server/config.h"
#include "server/server.h"

namespace {

using cuckood::server::Client;
using cuckood::server::Config;
using cuckood::server::Server;

constexpr std::array<std::string_view, 20> kCommands = {
    "CF.RESERVE", "CF.ADD", "CF.ADDNX",   "CF.INSERT", "CF.INSERTNX", "CF.EXISTS",   "CF.MEXISTS",
    "CF.COUNT",   "CF.DEL", "CF.COMPACT", "CF.INFO",   "CF.DEBUG",    "CF.SCANDUMP", "CF.LOADCHUNK",
    "SET",        "DEL",    "RENAME",     "TYPE",      "EXPIRE",      "OBJECT"};
constexpr std::array<std::string_view, 3> kKeys = {"k0", "k1", "{k0}x"};
constexpr std::array<std::string_view, 24> kWords = {"CAPACITY",
                                                     "NOCREATE",
                                                     "ITEMS",
                                                     "BUCKETSIZE",
                                                     "MAXITERATIONS",
                                                     "EXPANSION",
                                                     "0",
                                                     "1",
                                                     "2",
                                                     "-1",
                                                     "8",
                                                     "255",
                                                     "256",
                                                     "1000",
                                                     "32768",
                                                     "65535",
                                                     "65536",
                                                     "9223372036854775807",
                                                     "1e3",
                                                     "0x10",
                                                     " 1",
                                                     "",
                                                     "item",
                                                     "ENCODING"};

Server* g_server = nullptr;
std::filesystem::path g_dir;

void RemoveDir() {
  std::error_code ec;
  std::filesystem::remove_all(g_dir, ec);
}

Server& GetServer() {
  if (g_server == nullptr) {
    char tmpl[] = "/tmp/cuckood-fuzz-XXXXXX";
    const char* dir = mkdtemp(tmpl);
    FUZZ_CHECK(dir != nullptr);
    g_dir = dir;
    std::atexit(RemoveDir);
    Config cfg;
    cfg.bind = "127.0.0.1";
    cfg.port = 0;
    cfg.dir = (g_dir / "data").string();
    cfg.workers = 1;
    cfg.appendfsync = "no";
    cfg.loglevel = "warning";
    cfg.block_cache_size = 8ULL << 20;
    cfg.cache_size = 8ULL << 20;
    cfg.write_buffer_size = 4ULL << 20;
    cfg.cf_max_filter_bytes = 1ULL << 20;  // keeps every sub-filter small
    // Never destroyed: the io threads run until the process exits.
    g_server = new Server(cfg);
    g_server->Start();
  }
  return *g_server;
}

// Length of the RESP2 value at the start of `s`, or 0 when it is not one whole value.
size_t ReplyLength(std::string_view s, int depth = 0) {
  if (s.empty() || depth > 8) {
    return 0;
  }
  const size_t eol = s.find("\r\n");
  if (eol == std::string_view::npos) {
    return 0;
  }
  const std::string_view line = s.substr(1, eol - 1);
  const size_t head = eol + 2;
  auto number = [&](int64_t* out) {
    if (line.empty() || line.size() > 20) {
      return false;
    }
    char* end = nullptr;
    const std::string copy(line);
    *out = std::strtoll(copy.c_str(), &end, 10);
    return end == copy.c_str() + copy.size();
  };
  int64_t n = 0;
  switch (s[0]) {
    case '+':
    case '-':
      return line.find('\r') == std::string_view::npos ? head : 0;
    case ':':
      return number(&n) ? head : 0;
    case '$':
      if (!number(&n) || n < -1) {
        return 0;
      }
      if (n == -1) {
        return head;
      }
      if (s.size() - head < static_cast<size_t>(n) + 2 ||
          s.substr(head + static_cast<size_t>(n), 2) != "\r\n") {
        return 0;
      }
      return head + static_cast<size_t>(n) + 2;
    case '*': {
      if (!number(&n) || n < -1) {
        return 0;
      }
      size_t pos = head;
      for (int64_t i = 0; i < n; ++i) {
        const size_t len = ReplyLength(s.substr(pos), depth + 1);
        if (len == 0) {
          return 0;
        }
        pos += len;
      }
      return pos;
    }
    default:
      return 0;
  }
}

void Run(Server& server, Client& client, const std::vector<std::string>& args) {
  const std::vector<std::string_view> argv(args.begin(), args.end());
  std::string reply;
  cuckood::resp::Writer writer(&reply, 2);
  server.dispatcher().Dispatch(client, argv, writer);
  if (std::getenv("CUCKOOD_FUZZ_VERBOSE") != nullptr) {  // replaying a finding: show the session
    for (const auto& arg : args) {
      std::fprintf(stderr, "%s ", arg.c_str());
    }
    std::fprintf(stderr, "-> %s\n", reply.c_str());
  }
  FUZZ_CHECK(!reply.empty());
  FUZZ_CHECK(ReplyLength(reply) == reply.size());
  // RocksDB's status texts (unless the reply only echoes an argument, as unknown-command errors
  // do).
  if (reply[0] == '-') {
    for (std::string_view text : {"Invalid argument:", "Corruption:", "IO error:"}) {
      bool echoed = false;
      for (const auto& arg : args) {
        echoed = echoed || arg.find(text) != std::string::npos;
      }
      FUZZ_CHECK(echoed || reply.find(text) == std::string::npos);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  Server& server = GetServer();
  Client client;
  client.authenticated = true;
  FuzzedDataProvider in(bytes, size);
  for (int c = 0; c < 16 && in.remaining_bytes() > 0; ++c) {
    std::vector<std::string> args;
    args.emplace_back(kCommands[in.ConsumeIntegralInRange<size_t>(0, kCommands.size() - 1)]);
    if (in.ConsumeIntegralInRange(0, 15) != 0) {
      args.emplace_back(kKeys[in.ConsumeIntegralInRange<size_t>(0, kKeys.size() - 1)]);
    }
    const int extra = in.ConsumeIntegralInRange(0, 8);
    for (int a = 0; a < extra; ++a) {
      if (in.ConsumeBool()) {
        args.emplace_back(kWords[in.ConsumeIntegralInRange<size_t>(0, kWords.size() - 1)]);
      } else {
        args.push_back(in.ConsumeRandomLengthString(64));
      }
    }
    Run(server, client, args);
  }
  if (client.in_multi) {
    Run(server, client, {"DISCARD"});
  }
  Run(server, client, {"DEL", std::string(kKeys[0]), std::string(kKeys[1]), std::string(kKeys[2])});
  return 0;
}
