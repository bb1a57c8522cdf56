// COMMAND and its subcommands (COUNT, INFO, DOCS, LIST, GETKEYS, GETKEYSANDFLAGS, HELP), answered
// from the command table in Redis 7.0's shapes: cluster-aware clients route by the key
// positions and key specs, redis-cli builds its hints from DOCS.
//
// ACL categories and tips are the rows' own (CommandTable::Add puts the categories in canonical
// form). CF.* commands are shown as RedisBloom's module commands: flag "module", docs group
// "module" and module "bf".
//
// Argument docs: a "oneof" argument whose token lists choices separated by '|' ("NX|XX|GT|LT")
// is shown with one pure-token child argument per choice.
#include <algorithm>
#include <string>
#include <vector>

#include "server/command.h"
#include "server/commands/family.h"
#include "server/server.h"
#include "server/util.h"
#include "storage/db.h"

namespace cuckood::server {
namespace {

bool IsModuleCommand(const CommandSpec& spec) {
  return spec.name.rfind("cf.", 0) == 0 || spec.name.rfind("bf.", 0) == 0;
}

std::vector<std::string> CommandFlags(const CommandSpec& spec) {
  std::vector<std::string> flags;
  auto add = [&](uint32_t bit, const char* name) {
    if (spec.flags & bit) {
      flags.emplace_back(name);
    }
  };
  add(kWrite, "write");
  add(kReadOnly, "readonly");
  add(kDenyOom, "denyoom");
  if (IsModuleCommand(spec)) {
    flags.emplace_back("module");
  }
  add(kAdmin, "admin");
  add(kPubSub, "pubsub");
  add(kNoScript, "noscript");
  add(kLoading, "loading");
  add(kStale, "stale");
  add(kSkipSlowlog, "skip_slowlog");
  add(kAsking, "asking");
  add(kFast, "fast");
  add(kNoAuth, "no_auth");
  add(kMovableKeys, "movablekeys");
  return flags;
}

// One key spec: flags, begin_search index, find_keys range (lastkey relative to the first key).
struct KeySpec {
  std::vector<std::string_view> flags;
  int index = 0;  // begin_search by index (with a keyword: past every argument, for GETKEYS)
  int lastkey = 0;
  int step = 1;
  std::string_view keyword = {};  // begin_search by keyword, searched from `startfrom`
  int startfrom = 0;
};

// Redis 7.0's key specs for the commands it knows; otherwise one range spec from the row's key
// positions, RO+access for reads and RW+update for writes.
std::vector<KeySpec> KeySpecs(const CommandSpec& spec) {
  if (spec.first_key <= 0) {
    return {};
  }
  const int lastkey = spec.last_key < 0 ? spec.last_key : spec.last_key - spec.first_key;
  const int step = spec.step > 0 ? spec.step : 1;
  auto one = [&](std::vector<std::string_view> flags) {
    return std::vector<KeySpec>{{std::move(flags), spec.first_key, lastkey, step}};
  };
  const std::string& n = spec.name;
  if (n == "rename" || n == "renamenx") {
    return {{{"RW", "access", "delete"}, 1, 0, 1},
            {{"OW", n == "rename" ? "update" : "insert"}, 2, 0, 1}};
  }
  if (n == "copy") {
    return {{{"RO", "access"}, 1, 0, 1}, {{"OW", "update"}, 2, 0, 1}};
  }
  if (n == "move") {
    return one({"RW", "access", "update"});
  }
  if (n == "del" || n == "unlink") {
    return one({"RM", "delete"});
  }
  if (n == "exists" || n == "type" || n == "memory|usage" || n == "disk|usage" || n == "watch") {
    return one({"RO"});
  }
  if (n == "migrate") {
    return {{{"RW", "access", "delete"}, 3, 0, 1},
            {{"RW", "access", "delete", "incomplete"}, 1 << 30, -1, 1, "KEYS", -2}};
  }
  if (n == "restore" || n == "restore-asking") {
    return one({"OW", "update"});
  }
  if (n == "set") {
    return one({"RW", "access", "update", "variable_flags"});
  }
  if (spec.flags & kWrite) {
    return one({"RW", "update"});
  }
  return one({"RO", "access"});
}

void WriteKeySpecs(resp::Writer& out, const CommandSpec& spec) {
  const auto specs = KeySpecs(spec);
  out.SetHeader(static_cast<int64_t>(specs.size()));
  for (const auto& ks : specs) {
    out.MapHeader(3);
    out.Bulk("flags");
    out.SetHeader(static_cast<int64_t>(ks.flags.size()));
    for (auto f : ks.flags) {
      out.SimpleString(f);
    }
    out.Bulk("begin_search");
    out.MapHeader(2);
    out.Bulk("type");
    if (!ks.keyword.empty()) {
      out.Bulk("keyword");
      out.Bulk("spec");
      out.MapHeader(2);
      out.Bulk("keyword");
      out.Bulk(ks.keyword);
      out.Bulk("startfrom");
      out.Integer(ks.startfrom);
    } else {
      out.Bulk("index");
      out.Bulk("spec");
      out.MapHeader(1);
      out.Bulk("index");
      out.Integer(ks.index);
    }
    out.Bulk("find_keys");
    out.MapHeader(2);
    out.Bulk("type");
    out.Bulk("range");
    out.Bulk("spec");
    out.MapHeader(3);
    out.Bulk("lastkey");
    out.Integer(ks.lastkey);
    out.Bulk("keystep");
    out.Integer(ks.step);
    out.Bulk("limit");
    out.Integer(0);
  }
}

void WriteInfo(resp::Writer& out, const CommandSpec& spec) {
  out.ArrayHeader(10);
  out.Bulk(spec.name);
  out.Integer(spec.arity);
  const auto flags = CommandFlags(spec);
  out.SetHeader(static_cast<int64_t>(flags.size()));
  for (const auto& f : flags) {
    out.SimpleString(f);
  }
  out.Integer(spec.first_key);
  out.Integer(spec.last_key);
  out.Integer(spec.step);
  out.SetHeader(static_cast<int64_t>(spec.acl_categories.size()));
  for (const auto& c : spec.acl_categories) {
    out.SimpleString("@" + c);
  }
  out.SetHeader(static_cast<int64_t>(spec.tips.size()));
  for (const auto& t : spec.tips) {
    out.Bulk(t);
  }
  WriteKeySpecs(out, spec);
  if (spec.subcommands.empty()) {
    out.SetHeader(0);
  } else {
    out.ArrayHeader(static_cast<int64_t>(spec.subcommands.size()));
    for (const auto& sub : spec.subcommands) {
      WriteInfo(out, sub);
    }
  }
}

// A command by name, "parent|sub" included.
const CommandSpec* Lookup(Server& server, std::string_view name) {
  const auto bar = name.find('|');
  if (bar == std::string_view::npos) {
    return server.commands().Find(name);
  }
  const CommandSpec* parent = server.commands().Find(name.substr(0, bar));
  return parent == nullptr ? nullptr : FindSubcommand(*parent, name.substr(bar + 1));
}

void WriteAllInfo(CommandContext& ctx) {
  const auto& all = ctx.server.commands().all();
  ctx.out.ArrayHeader(static_cast<int64_t>(all.size()));
  for (const auto* spec : all) {
    WriteInfo(ctx.out, *spec);
  }
}

void CommandCommand(CommandContext& ctx) {
  if (ctx.argv.size() >= 2) {
    RunSubcommand(ctx);
    return;
  }
  WriteAllInfo(ctx);
}

void CountCommand(CommandContext& ctx) {
  ctx.out.Integer(static_cast<int64_t>(ctx.server.commands().all().size()));
}

void InfoSubcommand(CommandContext& ctx) {
  if (ctx.argv.size() == 2) {  // COMMAND INFO alone: every command, as COMMAND
    WriteAllInfo(ctx);
    return;
  }
  ctx.out.ArrayHeader(static_cast<int64_t>(ctx.argv.size() - 2));
  for (size_t i = 2; i < ctx.argv.size(); ++i) {
    const CommandSpec* spec = Lookup(ctx.server, ctx.argv[i]);
    if (spec == nullptr) {
      ctx.out.Null();
    } else {
      WriteInfo(ctx.out, *spec);
    }
  }
}

// ---- COMMAND DOCS -------------------------------------------------------------------------------

std::vector<std::string> SplitChoices(std::string_view token) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= token.size()) {
    size_t bar = token.find('|', pos);
    if (bar == std::string_view::npos) {
      bar = token.size();
    }
    out.emplace_back(token.substr(pos, bar - pos));
    pos = bar + 1;
  }
  return out;
}

// key_index: the key spec of a key argument (the n-th key argument has the n-th spec).
void WriteArg(resp::Writer& out, const CommandSpec& spec, const CommandArgDoc& arg, int key_index) {
  const bool choices = arg.type == "oneof" && arg.token.find('|') != std::string::npos;
  const bool key_spec = arg.type == "key" && spec.first_key > 0;
  const bool token = !arg.token.empty() && !choices;
  const bool flags = arg.optional || arg.multiple;
  out.MapHeader(2 + (key_spec ? 1 : 0) + (token ? 1 : 0) + (flags ? 1 : 0) + (choices ? 1 : 0));
  out.Bulk("name");
  out.Bulk(arg.name);
  out.Bulk("type");
  // redis-cli expects nested "arguments" under every oneof/block; a row that has no choices
  // to list is described as a plain string instead.
  const bool container = arg.type == "oneof" || arg.type == "block";
  out.Bulk(container && !choices ? std::string("string") : arg.type);
  if (key_spec) {
    out.Bulk("key_spec_index");
    out.Integer(key_index);
  }
  if (token) {
    out.Bulk("token");
    out.Bulk(arg.token);
  }
  if (flags) {
    out.Bulk("flags");
    out.SetHeader((arg.optional ? 1 : 0) + (arg.multiple ? 1 : 0));
    if (arg.optional) {
      out.SimpleString("optional");
    }
    if (arg.multiple) {
      out.SimpleString("multiple");
    }
  }
  if (choices) {
    const auto list = SplitChoices(arg.token);
    out.Bulk("arguments");
    out.ArrayHeader(static_cast<int64_t>(list.size()));
    for (const auto& c : list) {
      out.MapHeader(3);
      out.Bulk("name");
      out.Bulk(ToLower(c));
      out.Bulk("type");
      out.Bulk("pure-token");
      out.Bulk("token");
      out.Bulk(c);
    }
  }
}

void WriteDocs(resp::Writer& out, const CommandSpec& spec) {
  const bool module = IsModuleCommand(spec);
  const bool has_summary = !spec.summary.empty();
  const bool has_complexity = !spec.complexity.empty();
  const bool has_args = !spec.args.empty();
  const bool has_subs = !spec.subcommands.empty();
  out.MapHeader(2 + (has_summary ? 1 : 0) + (has_complexity ? 1 : 0) + (module ? 1 : 0) +
                (has_args ? 1 : 0) + (has_subs ? 1 : 0));
  if (has_summary) {
    out.Bulk("summary");
    out.Bulk(spec.summary);
  }
  out.Bulk("since");
  out.Bulk(spec.since);
  out.Bulk("group");
  out.Bulk(module ? "module" : spec.group);
  if (has_complexity) {
    out.Bulk("complexity");
    out.Bulk(spec.complexity);
  }
  if (module) {
    out.Bulk("module");
    out.Bulk(kModuleName);
  }
  if (has_args) {
    out.Bulk("arguments");
    out.ArrayHeader(static_cast<int64_t>(spec.args.size()));
    const int key_specs = static_cast<int>(KeySpecs(spec).size());
    int key_index = 0;
    for (const auto& arg : spec.args) {
      WriteArg(out, spec, arg, std::min(key_index, std::max(key_specs - 1, 0)));
      key_index += arg.type == "key" ? 1 : 0;
    }
  }
  if (has_subs) {
    out.Bulk("subcommands");
    out.MapHeader(static_cast<int64_t>(spec.subcommands.size()));
    for (const auto& sub : spec.subcommands) {
      out.Bulk(sub.name);
      WriteDocs(out, sub);
    }
  }
}

void DocsCommand(CommandContext& ctx) {
  std::vector<const CommandSpec*> specs;
  if (ctx.argv.size() == 2) {
    specs = ctx.server.commands().all();
  } else {
    for (size_t i = 2; i < ctx.argv.size(); ++i) {
      if (const CommandSpec* spec = Lookup(ctx.server, ctx.argv[i])) {
        specs.push_back(spec);
      }
    }
  }
  ctx.out.MapHeader(static_cast<int64_t>(specs.size()));
  for (const auto* spec : specs) {
    ctx.out.Bulk(spec->name);
    WriteDocs(ctx.out, *spec);
  }
}

// ---- COMMAND LIST -------------------------------------------------------------------------------

// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]; subcommands are listed
// by their full names, as Redis lists them.
void ListCommand(CommandContext& ctx) {
  enum class Filter { kNone, kModule, kAclCat, kPattern } filter = Filter::kNone;
  std::string value;
  if (ctx.argv.size() == 5 && EqualsIgnoreCase(ctx.argv[2], "filterby")) {
    value = std::string(ctx.argv[4]);
    if (EqualsIgnoreCase(ctx.argv[3], "module")) {
      filter = Filter::kModule;
    } else if (EqualsIgnoreCase(ctx.argv[3], "aclcat")) {
      filter = Filter::kAclCat;
    } else if (EqualsIgnoreCase(ctx.argv[3], "pattern")) {
      filter = Filter::kPattern;
    } else {
      ctx.out.Error(kSyntaxError);
      return;
    }
  } else if (ctx.argv.size() != 2) {
    ctx.out.Error(kSyntaxError);
    return;
  }
  auto keep = [&](const CommandSpec& spec) {
    switch (filter) {
      case Filter::kNone:
        return true;
      case Filter::kModule:
        return IsModuleCommand(spec) && EqualsIgnoreCase(value, kModuleName);
      case Filter::kAclCat: {
        const std::string wanted = ToLower(value);
        for (const auto& c : spec.acl_categories) {
          if (c == wanted) {
            return true;
          }
        }
        return false;
      }
      case Filter::kPattern:
        return storage::GlobMatch(value, spec.name, true);
    }
    return false;
  };
  std::vector<const std::string*> names;
  for (const auto* spec : ctx.server.commands().all()) {
    if (keep(*spec)) {
      names.push_back(&spec->name);
    }
    for (const auto& sub : spec->subcommands) {
      if (keep(sub)) {
        names.push_back(&sub.name);
      }
    }
  }
  ctx.out.ArrayHeader(static_cast<int64_t>(names.size()));
  for (const auto* n : names) {
    ctx.out.Bulk(*n);
  }
}

// ---- COMMAND GETKEYS / GETKEYSANDFLAGS ----------------------------------------------------------

void GetKeysGeneric(CommandContext& ctx, bool with_flags) {
  const Argv sub_argv(ctx.argv.begin() + 2, ctx.argv.end());
  const CommandSpec* spec = ctx.server.commands().Find(sub_argv[0]);
  if (spec != nullptr && !spec->subcommands.empty()) {
    spec = sub_argv.size() >= 2 ? FindSubcommand(*spec, sub_argv[1]) : nullptr;
  }
  if (spec == nullptr) {
    ctx.out.Error("ERR Invalid command specified");
    return;
  }
  if (spec->first_key <= 0) {
    ctx.out.Error("ERR The command has no key arguments");
    return;
  }
  if (!ArityAccepts(*spec, sub_argv.size())) {
    ctx.out.Error("ERR Invalid number of arguments specified for command");
    return;
  }
  const auto keys = CommandKeys(*spec, sub_argv);
  if (keys.empty()) {
    ctx.out.Error("ERR Invalid arguments specified for command");
    return;
  }
  const auto specs = KeySpecs(*spec);
  ctx.out.ArrayHeader(static_cast<int64_t>(keys.size()));
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!with_flags) {
      ctx.out.Bulk(keys[i]);
      continue;
    }
    // The key's argv position picks the spec that starts at or before it (the last such one).
    const int pos = spec->first_key + static_cast<int>(i) * (spec->step > 0 ? spec->step : 1);
    const KeySpec* ks = &specs.front();
    for (const auto& candidate : specs) {
      if (candidate.index <= pos) {
        ks = &candidate;
      }
    }
    ctx.out.ArrayHeader(2);
    ctx.out.Bulk(keys[i]);
    ctx.out.SetHeader(static_cast<int64_t>(ks->flags.size()));
    for (auto f : ks->flags) {
      ctx.out.SimpleString(f);
    }
  }
}

void GetKeysCommand(CommandContext& ctx) {
  GetKeysGeneric(ctx, false);
}
void GetKeysAndFlagsCommand(CommandContext& ctx) {
  GetKeysGeneric(ctx, true);
}

void HelpCommand(CommandContext& ctx) {
  ReplyHelp(ctx.out, "COMMAND",
            {"(no subcommand)", "    Return details about all commands.", "COUNT",
             "    Return the total number of commands in this server.", "LIST",
             "    Return a list of all commands in this server.", "INFO [<command-name> ...]",
             "    Return details about multiple commands.",
             "    If no command names are given, documentation details for all",
             "    commands are returned.", "DOCS [<command-name> ...]",
             "    Return documentation details about multiple commands.",
             "    If no command names are given, documentation details for all",
             "    commands are returned.", "GETKEYS <full-command>",
             "    Return the keys from a full command.", "GETKEYSANDFLAGS <full-command>",
             "    Return the keys and the access flags from a full command."});
}

}  // namespace

void RegisterIntrospectionCommands(CommandTable& table) {
  CommandSpec command = CommandSpec{
      .name = "command",
      .arity = -1,
      .flags = kLoading | kStale,
      .handler = CommandCommand,
      .summary = "Get array of Redis command details",
      .since = "2.8.13",
      .group = "server",
      .complexity = "O(N) where N is the total number of Redis commands",
      .acl_categories = {"slow", "connection"},
      .tips = {"nondeterministic_output_order"},
  };
  auto& subs = command.subcommands;
  const CommandArgDoc names{"command-name", "string", "", true, true};
  subs.push_back(CommandSpec{
      .name = "command|count",
      .arity = 2,
      .flags = kLoading | kStale,
      .handler = CountCommand,
      .summary = "Get total number of Redis commands",
      .since = "2.8.13",
      .group = "server",
      .complexity = "O(1)",
      .acl_categories = {"slow", "connection"},
  });
  subs.push_back(CommandSpec{
      .name = "command|info",
      .arity = -2,
      .flags = kLoading | kStale,
      .handler = InfoSubcommand,
      .summary = "Get array of specific Redis command details, or all when no argument is "
                 "given.",
      .since = "2.8.13",
      .group = "server",
      .complexity = "O(N) where N is the number of commands to look up",
      .args = {names},
      .acl_categories = {"slow", "connection"},
      .tips = {"nondeterministic_output_order"},
  });
  subs.push_back(CommandSpec{
      .name = "command|docs",
      .arity = -2,
      .flags = kLoading | kStale,
      .handler = DocsCommand,
      .summary = "Get array of specific Redis command documentation",
      .since = "7.0.0",
      .group = "server",
      .complexity = "O(N) where N is the number of commands to look up",
      .args = {names},
      .acl_categories = {"slow", "connection"},
      .tips = {"nondeterministic_output_order"},
  });
  subs.push_back(CommandSpec{
      .name = "command|list",
      .arity = -2,
      .flags = kLoading | kStale,
      .handler = ListCommand,
      .summary = "Get an array of Redis command names",
      .since = "7.0.0",
      .group = "server",
      .complexity = "O(N) where N is the total number of Redis commands",
      .args = {{"filterby", "oneof", "FILTERBY", true, false}},
      .acl_categories = {"slow", "connection"},
      .tips = {"nondeterministic_output_order"},
  });
  subs.push_back(CommandSpec{
      .name = "command|getkeys",
      .arity = -4,
      .flags = kLoading | kStale,
      .handler = GetKeysCommand,
      .summary = "Extract keys given a full Redis command",
      .since = "2.8.13",
      .group = "server",
      .complexity = "O(N) where N is the number of arguments to the command",
      .acl_categories = {"slow", "connection"},
  });
  subs.push_back(CommandSpec{
      .name = "command|getkeysandflags",
      .arity = -4,
      .flags = kLoading | kStale,
      .handler = GetKeysAndFlagsCommand,
      .summary = "Extract keys and access flags given a full Redis command",
      .since = "7.0.0",
      .group = "server",
      .complexity = "O(N) where N is the number of arguments to the command",
      .acl_categories = {"slow", "connection"},
  });
  subs.push_back(CommandSpec{
      .name = "command|help",
      .arity = 2,
      .flags = kLoading | kStale,
      .handler = HelpCommand,
      .summary = "Show helpful text about the different subcommands",
      .since = "5.0.0",
      .group = "server",
      .complexity = "O(1)",
      .acl_categories = {"slow", "connection"},
  });
  table.Add(std::move(command));
}

}  // namespace cuckood::server
