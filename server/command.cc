#include "server/command.h"

#include <algorithm>
#include <iterator>

#include "server/util.h"

namespace cuckood::server {

namespace {

// Redis's ACL categories in their bit order (the order COMMAND INFO lists them).
constexpr std::string_view kCategoryOrder[] = {
    "keyspace", "read",   "write",       "set",       "sortedset",  "list",        "hash",
    "string",   "bitmap", "hyperloglog", "geo",       "stream",     "pubsub",      "admin",
    "fast",     "slow",   "blocking",    "dangerous", "connection", "transaction", "scripting"};

void Canonicalize(CommandSpec& spec) {
  spec.acl_categories = CanonicalAclCategories(spec);
  for (auto& sub : spec.subcommands) {
    Canonicalize(sub);
  }
}

}  // namespace

std::vector<std::string> CanonicalAclCategories(const CommandSpec& spec) {
  std::vector<std::string> given = spec.acl_categories;
  auto add_if = [&given](bool cond, std::string_view c) {
    if (cond) {
      given.emplace_back(c);
    }
  };
  add_if(spec.flags & kWrite, "write");
  add_if(spec.flags & kReadOnly, "read");
  add_if(spec.flags & kAdmin, "admin");
  add_if(spec.flags & kAdmin, "dangerous");
  add_if(spec.flags & kPubSub, "pubsub");
  add_if(spec.flags & kFast, "fast");
  add_if(std::find(given.begin(), given.end(), "fast") == given.end(), "slow");
  std::vector<std::string> out;
  for (auto known : kCategoryOrder) {
    if (std::find(given.begin(), given.end(), known) != given.end()) {
      out.emplace_back(known);
    }
  }
  for (const auto& g : given) {
    const bool builtin = std::find(std::begin(kCategoryOrder), std::end(kCategoryOrder), g) !=
                         std::end(kCategoryOrder);
    if (!builtin && std::find(out.begin(), out.end(), g) == out.end()) {
      out.push_back(g);
    }
  }
  return out;
}

bool ArityAccepts(const CommandSpec& spec, size_t argc) {
  const auto n = static_cast<int64_t>(argc);
  return spec.arity > 0 ? n == spec.arity : n >= -static_cast<int64_t>(spec.arity);
}

void CommandTable::Add(CommandSpec spec) {
  Canonicalize(spec);
  auto owned = std::make_unique<CommandSpec>(std::move(spec));
  const CommandSpec* p = owned.get();
  by_name_[p->name] = p;
  order_.push_back(p);
  storage_.push_back(std::move(owned));
}

const CommandSpec* CommandTable::Find(std::string_view name) const {
  // Lower-case into a stack buffer: no allocation on the command path.
  char buf[64] = {};
  if (name.size() > sizeof(buf)) {
    return nullptr;
  }
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    buf[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  auto it = by_name_.find(std::string_view(buf, name.size()));
  return it == by_name_.end() ? nullptr : it->second;
}

bool CommandTable::Rename(const std::string& from, const std::string& to) {
  auto it = by_name_.find(ToLower(from));
  if (it == by_name_.end()) {
    return false;
  }
  const CommandSpec* spec = it->second;
  by_name_.erase(it);
  if (!to.empty()) {
    by_name_[ToLower(to)] = spec;
  } else {
    std::erase(order_, spec);
  }
  return true;
}

std::vector<std::string_view> CommandKeys(const CommandSpec& spec, const Argv& argv) {
  std::vector<std::string_view> keys;
  CommandKeys(spec, argv, &keys);
  return keys;
}

void CommandKeys(const CommandSpec& spec, const Argv& argv, std::vector<std::string_view>* out) {
  std::vector<std::string_view>& keys = *out;
  keys.clear();
  if (spec.first_key <= 0) {
    return;
  }
  if ((spec.flags & kMovableKeys) && spec.name == "migrate" && argv.size() > 3 && argv[3].empty()) {
    // MIGRATE host port "" db timeout [COPY] [REPLACE] [AUTH pw] [AUTH2 user pw] KEYS k...
    for (size_t i = 6; i < argv.size(); ++i) {
      if (EqualsIgnoreCase(argv[i], "auth2")) {
        i += 2;
      } else if (EqualsIgnoreCase(argv[i], "auth")) {
        i += 1;
      } else if (EqualsIgnoreCase(argv[i], "keys")) {
        keys.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
        break;
      }
    }
    return;
  }
  const int argc = static_cast<int>(argv.size());
  int last = spec.last_key;
  if (last < 0) {
    last = argc + last;
  }
  const int step = spec.step > 0 ? spec.step : 1;
  for (int i = spec.first_key; i <= last && i < argc; i += step) {
    keys.push_back(argv[static_cast<size_t>(i)]);
  }
}

}  // namespace cuckood::server

namespace cuckood::server {

std::optional<OtherDbKey> CommandOtherDbKey(const CommandSpec& spec, const Argv& argv) {
  if (!(spec.flags & kOtherDbKeys)) {
    return std::nullopt;
  }
  auto db_of = [](std::string_view arg) -> std::optional<uint16_t> {
    auto v = ParseInt64(arg);
    if (!v || *v < 0 || *v > UINT16_MAX) {
      return std::nullopt;
    }
    return static_cast<uint16_t>(*v);
  };
  if (spec.name == "move" && argv.size() == 3) {  // MOVE key db
    auto db = db_of(argv[2]);
    return db ? std::optional<OtherDbKey>(OtherDbKey{*db, argv[1]}) : std::nullopt;
  }
  if (spec.name == "copy" && argv.size() >= 3) {  // COPY source destination [DB n] [REPLACE]
    std::optional<uint16_t> db;
    for (size_t i = 3; i < argv.size(); ++i) {
      if (EqualsIgnoreCase(argv[i], "replace")) {
        continue;
      }
      if (!EqualsIgnoreCase(argv[i], "db") || i + 1 == argv.size()) {
        return std::nullopt;
      }
      db = db_of(argv[++i]);
      if (!db) {
        return std::nullopt;
      }
    }
    return db ? std::optional<OtherDbKey>(OtherDbKey{*db, argv[2]}) : std::nullopt;
  }
  return std::nullopt;
}

bool RunsInBackground(const CommandSpec& spec, const Argv& argv) {
  if (spec.flags & kBackground) {
    return true;
  }
  return spec.name == "debug" && argv.size() >= 2 && EqualsIgnoreCase(argv[1], "reload");
}

}  // namespace cuckood::server
