// MIGRATE: moves keys to another server as Redis 7.0 does, by sending it AUTH (when asked),
// SELECT and one RESTORE per key with each key's DUMP payload and remaining TTL, then deleting
// each local key whose RESTORE the target acknowledged (unless COPY). Redis's replies: +OK,
// +NOKEY when none of the keys exists, "Target instance replied with error: ..." and the IOERR
// texts. Unlike Redis, no connection is kept for the next MIGRATE (so SELECT is always sent),
// and only a status reply counts as the target's acknowledgement.
//
// The command holds the stripes of the keys it moves (CommandKeys knows MIGRATE's key
// positions) and runs off the io thread (kBackground), waiting for the target at most `timeout`
// milliseconds per network step.
#include <asio.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "resp/writer.h"
#include "server/command.h"
#include "server/server.h"
#include "server/util.h"
#include "storage/db.h"
#include "storage/engine.h"

namespace cuckood::server {
namespace {

constexpr std::string_view kKeysNeedEmptyKey =
    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string";
constexpr std::string_view kConnectError = "IOERR error or timeout connecting to the client";
constexpr std::string_view kWriteError = "IOERR error or timeout writing to target instance";
constexpr std::string_view kReadError = "IOERR error or timeout reading to target instance";
constexpr std::string_view kTargetError = "ERR Target instance replied with error: ";

constexpr int64_t kDefaultTimeoutMs = 1000;
constexpr size_t kWriteChunk = 64 * 1024;
constexpr size_t kMaxReplyLine = 1024;

// A blocking connection to the target: every step runs on a private io_context for at most
// the timeout, after which the socket is closed and the step fails.
class TargetConnection {
 public:
  explicit TargetConnection(std::chrono::milliseconds timeout) : timeout_(timeout), socket_(io_) {}

  bool Connect(const std::string& host, const std::string& port) {
    asio::ip::tcp::resolver resolver(io_);
    bool done = false;
    asio::error_code result = asio::error::timed_out;
    resolver.async_resolve(host, port, [&](const asio::error_code& ec, auto endpoints) {
      if (ec) {
        result = ec;
        done = true;
        return;
      }
      asio::async_connect(socket_, endpoints, [&](const asio::error_code& ec2, const auto&) {
        result = ec2;
        done = true;
      });
    });
    if (!RunUntil(done)) {
      resolver.cancel();
    }
    if (!done) {
      Finish(done);
    }
    if (!result) {
      socket_.set_option(asio::ip::tcp::no_delay(true));
    }
    return !result;
  }

  bool Write(std::string_view data) {
    for (size_t pos = 0; pos < data.size(); pos += kWriteChunk) {
      const size_t n = std::min(kWriteChunk, data.size() - pos);
      bool done = false;
      asio::error_code result = asio::error::timed_out;
      asio::async_write(socket_, asio::buffer(data.data() + pos, n),
                        [&](const asio::error_code& ec, size_t) {
                          result = ec;
                          done = true;
                        });
      if (!RunUntil(done)) {
        Finish(done);
        return false;
      }
      if (result) {
        return false;
      }
    }
    return true;
  }

  // One reply line without its CRLF; false on error, timeout or a line too long.
  bool ReadLine(std::string* line) {
    bool done = false;
    asio::error_code result = asio::error::timed_out;
    asio::async_read_until(socket_, asio::dynamic_buffer(buffer_, kMaxReplyLine), "\r\n",
                           [&](const asio::error_code& ec, size_t) {
                             result = ec;
                             done = true;
                           });
    if (!RunUntil(done)) {
      Finish(done);
      return false;
    }
    if (result) {
      return false;
    }
    const size_t end = buffer_.find("\r\n");
    line->assign(buffer_, 0, end);
    buffer_.erase(0, end + 2);
    return true;
  }

 private:
  // Runs handlers until `done` or the timeout; true when done.
  bool RunUntil(const bool& done) {
    io_.restart();
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (!done && std::chrono::steady_clock::now() < deadline) {
      io_.run_one_until(deadline);
    }
    return done;
  }
  // After a timeout: closes the socket and lets the cancelled operation complete.
  void Finish(const bool& done) {
    asio::error_code ignored;
    socket_.close(ignored);
    io_.restart();
    while (!done && io_.run_one() > 0) {
    }
  }

  std::chrono::milliseconds timeout_;
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
  std::string buffer_;
};

struct MigrateOptions {
  bool copy = false;
  bool replace = false;
  std::optional<std::string> username;
  std::optional<std::string> password;
  size_t first_key = 3;  // argv index of the first key
  size_t num_keys = 1;
  int64_t db = 0;
  int64_t timeout_ms = kDefaultTimeoutMs;
};

// Parses argv as Redis does (options, then timeout and db); false after writing the error.
bool ParseMigrate(CommandContext& ctx, MigrateOptions* o) {
  const Argv& argv = ctx.argv;
  for (size_t j = 6; j < argv.size(); ++j) {
    const size_t more = argv.size() - 1 - j;
    if (EqualsIgnoreCase(argv[j], "copy")) {
      o->copy = true;
    } else if (EqualsIgnoreCase(argv[j], "replace")) {
      o->replace = true;
    } else if (EqualsIgnoreCase(argv[j], "auth")) {
      if (more < 1) {
        ctx.out.Error(kSyntaxError);
        return false;
      }
      o->password = std::string(argv[++j]);
    } else if (EqualsIgnoreCase(argv[j], "auth2")) {
      if (more < 2) {
        ctx.out.Error(kSyntaxError);
        return false;
      }
      o->username = std::string(argv[++j]);
      o->password = std::string(argv[++j]);
    } else if (EqualsIgnoreCase(argv[j], "keys")) {
      if (!argv[3].empty()) {
        ctx.out.Error(kKeysNeedEmptyKey);
        return false;
      }
      o->first_key = j + 1;
      o->num_keys = argv.size() - j - 1;
      break;
    } else {
      ctx.out.Error(kSyntaxError);
      return false;
    }
  }
  auto timeout = ParseInt64(argv[5]);
  auto db = ParseInt64(argv[4]);
  if (!timeout || !db) {
    ctx.out.Error(kNotIntegerError);
    return false;
  }
  o->timeout_ms = *timeout <= 0 ? kDefaultTimeoutMs : *timeout;
  o->db = *db;
  return true;
}

// Redis takes any reply but an error as success. Here only a status reply is: a target that is
// not a RESP server (an HTTP proxy answers "HTTP/1.1 400 ...") must not make keys disappear.
bool Acknowledged(std::string_view line) {
  return line.starts_with('+');
}
std::string ErrorText(std::string_view line) {
  return std::string(line.starts_with('-') ? line.substr(1) : line);
}

void AppendCommand(std::string* out, std::initializer_list<std::string_view> args) {
  resp::Writer w(out, 2);
  w.ArrayHeader(static_cast<int64_t>(args.size()));
  for (auto a : args) {
    w.Bulk(a);
  }
}

void Migrate(CommandContext& ctx) {
  ctx.NothingModified();
  MigrateOptions o;
  if (!ParseMigrate(ctx, &o)) {
    return;
  }
  auto& db = ctx.server.db();
  const uint16_t ns = ctx.ns;
  // The keys that exist, with their remaining TTL (0 = none) and payload.
  struct Moving {
    std::string_view key;
    int64_t ttl_ms = 0;
    std::string payload;
  };
  std::vector<Moving> moving;
  for (size_t j = 0; j < o.num_keys; ++j) {
    const std::string_view key = ctx.argv[o.first_key + j];
    auto meta = db.Get(ctx.scope, ns, key);
    if (!meta.ok()) {
      ReplyStatusError(ctx.out, meta.status());
      return;
    }
    if (!meta->has_value()) {
      continue;
    }
    Moving m;
    m.key = key;
    if ((*meta)->expire_ms != 0) {
      const int64_t left =
          static_cast<int64_t>((*meta)->expire_ms) - static_cast<int64_t>(storage::NowMs());
      if (left < 0) {
        continue;
      }
      m.ttl_ms = std::max<int64_t>(left, 1);
    }
    auto payload = db.Dump(ctx.scope, ns, key);
    if (!payload.ok()) {
      ReplyStatusError(ctx.out, payload.status());
      return;
    }
    if (!payload->has_value()) {
      continue;
    }
    m.payload = std::move(**payload);
    moving.push_back(std::move(m));
  }
  if (moving.empty()) {
    ctx.out.SimpleString("NOKEY");
    return;
  }
  TargetConnection target{std::chrono::milliseconds(o.timeout_ms)};
  if (!target.Connect(std::string(ctx.argv[1]), std::string(ctx.argv[2]))) {
    ctx.out.Error(kConnectError);
    return;
  }
  std::string request;
  if (o.password) {
    if (o.username) {
      AppendCommand(&request, {"AUTH", *o.username, *o.password});
    } else {
      AppendCommand(&request, {"AUTH", *o.password});
    }
  }
  const std::string db_text = std::to_string(o.db);
  AppendCommand(&request, {"SELECT", db_text});
  for (const auto& m : moving) {
    const std::string ttl = std::to_string(m.ttl_ms);
    if (o.replace) {
      AppendCommand(&request, {"RESTORE", m.key, ttl, m.payload, "REPLACE"});
    } else {
      AppendCommand(&request, {"RESTORE", m.key, ttl, m.payload});
    }
  }
  if (!target.Write(request)) {
    ctx.out.Error(kWriteError);
    return;
  }
  std::string auth_reply, select_reply, line;
  if ((o.password && !target.ReadLine(&auth_reply)) || !target.ReadLine(&select_reply)) {
    ctx.out.Error(kReadError);
    return;
  }
  std::optional<std::string> target_error;
  if (o.password && !Acknowledged(auth_reply)) {
    target_error = ErrorText(auth_reply);
  } else if (!Acknowledged(select_reply)) {
    target_error = ErrorText(select_reply);
  }
  bool socket_error = false;
  for (const auto& m : moving) {
    if (!target.ReadLine(&line)) {
      socket_error = true;
      break;
    }
    if (target_error || !Acknowledged(line)) {
      if (!target_error) {
        target_error = ErrorText(line);
      }
      continue;
    }
    if (!o.copy) {
      auto s = db.Delete(ns, m.key);
      if (!s.ok()) {
        ReplyStatusError(ctx.out, s.status());
        return;
      }
      ctx.Modified(m.key);
    }
  }
  if (target_error) {
    ctx.out.Error(std::string(kTargetError) + *target_error);
  } else if (socket_error) {
    ctx.out.Error(kReadError);
  } else {
    ctx.out.SimpleString("OK");
  }
}

}  // namespace

void RegisterMigrateCommand(CommandTable& table) {
  table.Add(CommandSpec{
      .name = "migrate",
      .arity = -6,
      .flags = kWrite | kMovableKeys | kBackground,
      .first_key = 3,  // the KEYS form: see CommandKeys
      .last_key = 3,
      .step = 1,
      .handler = Migrate,
      .summary = "Atomically transfer a key from a Redis instance to another one.",
      .since = "2.6.0",
      .group = "generic",
      .complexity =
          "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the "
          "target instance. See the pages of these commands for time complexity. Also an O(N) data "
          "transfer between the two instances is performed.",
      .args = {{"host", "string", "", false, false},
               {"port", "integer", "", false, false},
               {"key-selector", "oneof", "", false, false},
               {"destination-db", "integer", "", false, false},
               {"timeout", "integer", "", false, false},
               {"copy", "pure-token", "COPY", true, false},
               {"replace", "pure-token", "REPLACE", true, false},
               {"authentication", "oneof", "", true, false},
               {"keys", "key", "KEYS", true, true}},
      .acl_categories = {"keyspace", "dangerous"},
      .tips = {"nondeterministic_output"},
  });
}

}  // namespace cuckood::server
