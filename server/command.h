// The command table: one row per command (name, arity, flags, key positions, handler, ACL
// categories, tips, docs), each written as a designated initialiser of CommandSpec. Each family
// registers its rows explicitly (RegisterXxxCommands at the bottom of its file); the dispatcher and
// COMMAND/COMMAND DOCS answer from the same rows.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "resp/writer.h"
#include "storage/scope.h"

namespace cuckood::server {

class Server;
struct Client;

enum CommandFlag : uint32_t {
  kWrite = 1 << 0,
  kReadOnly = 1 << 1,
  kFast = 1 << 2,
  kDenyOom = 1 << 3,
  kAdmin = 1 << 4,
  kNoAuth = 1 << 5,   // allowed before AUTH
  kNoMulti = 1 << 6,  // runs at once inside MULTI (EXEC, DISCARD, MULTI, WATCH, ...)
  kLockAll = 1 << 7,  // takes every key stripe (FLUSHDB, FLUSHALL)
  kNoScript = 1 << 8,
  kLoading = 1 << 9,
  kStale = 1 << 10,
  kPubSub = 1 << 11,
  kSkipSlowlog = 1 << 12,
  kNoWatchBump = 1 << 13,   // a "write" that never modifies data seen by WATCH
  kBackground = 1 << 14,    // may run long: executed off the io thread (the connection waits)
  kHandlerArity = 1 << 15,  // inside MULTI, queued without an arity check (checked at EXEC)
  kGroupCommit = 1 << 16,   // pipelined, its writes may share one RocksDB write (WriteGroup)
  kAsking = 1 << 17,        // Redis's "asking" flag (RESTORE-ASKING): runs on an importing slot
  kMovableKeys = 1 << 18,   // keys not all at first/last/step (MIGRATE): CommandKeys finds them
  kOtherDbKeys = 1 << 19,   // also writes a key of another database (COPY ... DB, MOVE)
};

using Argv = std::vector<std::string_view>;

struct CommandContext {
  Server& server;
  Client& client;
  resp::Writer& out;
  const Argv& argv;
  // The storage namespace of the client's database (client.db unless SWAPDB swapped it), read
  // once the command's key stripes are held: what every storage::Db call of the handler names.
  // (client.db stays the database's number: SELECT, WATCH, CLIENT LIST, INFO.)
  uint16_t ns = 0;
  // What the handler's storage calls receive (storage/scope.h): the read mode and the write
  // group the command commits into (server/dispatcher.h builds it).
  storage::Scope scope;
  // The keys a write command modified, when the handler lists them itself (the generic commands:
  // Redis signals only real modifications, so DEL of a missing key or SET NX that finds the key
  // does not abort a WATCHing transaction). Unset: every key of the command, as RedisBloom's
  // commands count as modifying the key they open for writing even when nothing changes.
  std::optional<std::vector<std::string_view>> modified;

  void NothingModified() {
    if (!modified) {
      modified.emplace();
    }
  }
  void Modified(std::string_view key) {
    NothingModified();
    modified->push_back(key);
  }
};

using Handler = void (*)(CommandContext& ctx);
// Runs consecutive calls of one command by one client, all naming the same key with the same
// number of arguments (ctx.argv is the first), as one, and writes their replies in order;
// (*starts)[i] is where call i's reply begins in ctx.out's buffer. The replies and the data must
// be those of the calls run one after the other (Dispatcher::DispatchCombined).
using CombinedHandler = void (*)(CommandContext& ctx, std::span<const Argv> calls,
                                 std::vector<size_t>* starts);

struct CommandArgDoc {
  std::string name = {};
  std::string type = {};  // key, string, integer, pure-token, block, oneof
  std::string token = {};
  bool optional = false;
  bool multiple = false;
};

struct CommandSpec {
  std::string name = {};  // lower case, e.g. "cf.add"
  int arity = 0;          // Redis convention: n = exactly n, -n = at least n (name included)
  uint32_t flags = 0;
  int first_key = 0;
  int last_key = 0;
  int step = 0;
  Handler handler = nullptr;
  CombinedHandler combined = nullptr;  // (CombinedHandler; nullptr: calls run one by one)
  // The same for consecutive calls that name different keys (reads only; ctx.argv is the
  // first call): Dispatcher::DispatchAcrossKeys. nullptr: such calls run one by one.
  CombinedHandler across_keys = nullptr;
  std::string summary = {};
  std::string since = "1.0.0";
  std::string group = "generic";
  std::string complexity = {};
  std::vector<CommandArgDoc> args = {};
  // ACL categories, lower case without '@' ("read", "cuckoo"). A row names the ones its flags do
  // not imply; CommandTable::Add completes and orders them (see CanonicalAclCategories).
  std::vector<std::string> acl_categories = {};
  // COMMAND INFO tips, as Redis 7.0 gives them ("request_policy:all_shards", ...): cluster-aware
  // clients route by them.
  std::vector<std::string> tips = {};
  std::vector<CommandSpec> subcommands = {};  // CONFIG GET, CLIENT LIST, ... (name "config|get")
};

// The row's ACL categories completed with the ones its flags imply (write, read, admin and
// dangerous, pubsub, fast, otherwise slow), in Redis's category order, other categories (a
// module's) after them in the row's order, without duplicates.
std::vector<std::string> CanonicalAclCategories(const CommandSpec& spec);

// Whether a call with argc arguments (the command name included) fits the row's arity: exactly
// `arity` when it is positive, at least `-arity` when it is negative.
bool ArityAccepts(const CommandSpec& spec, size_t argc);

class CommandTable {
 public:
  // Registers a row; its ACL categories (and its subcommands') are put in canonical form.
  void Add(CommandSpec spec);
  // Case-insensitive lookup; nullptr when unknown (or disabled by rename-command).
  const CommandSpec* Find(std::string_view name) const;
  // rename-command: newname empty disables the command.
  bool Rename(const std::string& from, const std::string& to);
  const std::vector<const CommandSpec*>& all() const { return order_; }

 private:
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::unique_ptr<CommandSpec>> storage_;
  std::unordered_map<std::string, const CommandSpec*, NameHash, std::equal_to<>> by_name_;
  std::vector<const CommandSpec*> order_;
};

// Key positions of argv for a spec (for locks, WATCH, COMMAND GETKEYS). MIGRATE's keys are its
// key argument, or when that is empty, every argument after its KEYS option.
std::vector<std::string_view> CommandKeys(const CommandSpec& spec, const Argv& argv);
// The same into *out (cleared first; its capacity is kept).
void CommandKeys(const CommandSpec& spec, const Argv& argv, std::vector<std::string_view>* out);
// A key of a database other than the client's that a kOtherDbKeys command writes (COPY's
// destination with a DB option, MOVE's key in the target database): its stripe is taken with
// the others. nullopt when the command names none, or names it badly (the handler replies).
struct OtherDbKey {
  uint16_t db = 0;
  std::string_view key;
};
std::optional<OtherDbKey> CommandOtherDbKey(const CommandSpec& spec, const Argv& argv);
// Whether a connection runs this command on the background pool: kBackground rows, and DEBUG
// RELOAD (it parks every io thread, so it cannot run on one; DEBUG's other subcommands run inline).
bool RunsInBackground(const CommandSpec& spec, const Argv& argv);

void RegisterConnectionCommands(CommandTable& table);
void RegisterKeyspaceCommands(CommandTable& table);
void RegisterServerCommands(CommandTable& table);
void RegisterIntrospectionCommands(CommandTable& table);
void RegisterCfCommands(CommandTable& table);
void RegisterStringCommands(CommandTable& table);
void RegisterTransactionCommands(CommandTable& table);
void RegisterClusterCommands(CommandTable& table);
void RegisterReplicationCommands(CommandTable& table);
void RegisterPubSubCommands(CommandTable& table);
void RegisterDumpCommands(CommandTable& table);

}  // namespace cuckood::server
