#include "server/config.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace cuckood::server {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test case, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("cuckood_config_test_" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string Write(const std::string& name, const std::string& text) const {
    const fs::path p = path_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// argv for ParseCommandLine from string literals.
class CliArgv {
 public:
  CliArgv(std::initializer_list<std::string> args) : args_(args) {
    for (auto& a : args_) {
      ptrs_.push_back(a.data());
    }
    ptrs_.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(args_.size()); }
  char** argv() { return ptrs_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<char*> ptrs_;
};

std::string Get(const Config& cfg, const std::string& name) {
  const OptionRow* row = FindOption(name);
  REQUIRE(row != nullptr);
  return row->get(cfg);
}

std::optional<std::string> Set(Config& cfg, const std::string& name, const std::string& value) {
  const OptionRow* row = FindOption(name);
  REQUIRE(row != nullptr);
  return row->set(cfg, value);
}

// The repository root, found from this file's path (tests/server/config_test.cc).
fs::path RepoRoot() {
  return fs::path(CUCKOOD_SOURCE_DIR);
}

TEST_CASE("ParseMemory accepts Redis's units, case-insensitively", "[config]") {
  CHECK(ParseMemory("0") == 0u);
  CHECK(ParseMemory("100") == 100u);
  CHECK(ParseMemory("100b") == 100u);
  CHECK(ParseMemory("1k") == 1000u);
  CHECK(ParseMemory("1kb") == 1024u);
  CHECK(ParseMemory("2m") == 2000000u);
  CHECK(ParseMemory("2MB") == 2u << 20);
  CHECK(ParseMemory("3g") == 3000000000u);
  CHECK(ParseMemory("3Gb") == 3ULL << 30);
  CHECK(ParseMemory("18446744073709551615") == UINT64_MAX);

  SECTION("malformed sizes and overflow are rejected") {
    for (const char* bad : {"", "k", "-1", "+1", " 1", "1 ", "1.5mb", "1tb", "1kk", "1 kb",
                            "18446744073709551616", "17179869184gb"}) {
      INFO(bad);
      CHECK_FALSE(ParseMemory(bad).has_value());
    }
  }
}

TEST_CASE("The option table has one row per Config field, found case-insensitively", "[config]") {
  const std::vector<std::string> expected = {"bind",
                                             "port",
                                             "tls-port",
                                             "tls-cert-file",
                                             "tls-key-file",
                                             "tls-ca-cert-file",
                                             "tls-auth-clients",
                                             "dir",
                                             "workers",
                                             "requirepass",
                                             "protected-mode",
                                             "enable-debug-command",
                                             "appendfsync",
                                             "maxclients",
                                             "timeout",
                                             "tcp-keepalive",
                                             "loglevel",
                                             "logfile",
                                             "databases",
                                             "proto-max-bulk-len",
                                             "client-query-buffer-limit",
                                             "client-output-buffer-limit",
                                             "group-commit",
                                             "combine-commands",
                                             "key-affinity",
                                             "adaptive-io-threads",
                                             "malloc-huge-pages",
                                             "block-cache-size",
                                             "write-buffer-size",
                                             "memtable",
                                             "cache-size",
                                             "chain-index-memory",
                                             "slowlog-log-slower-than",
                                             "slowlog-max-len",
                                             "latency-monitor-threshold",
                                             "rename-command",
                                             "pidfile",
                                             "cf-initial-size",
                                             "cf-bucket-size",
                                             "cf-max-iterations",
                                             "cf-expansion-factor",
                                             "cf-max-expansions",
                                             "cf-sizing",
                                             "cf-page-size",
                                             "cf-max-filter-bytes",
                                             "cluster-enabled",
                                             "cluster-config-file",
                                             "cluster-import-timeout",
                                             "replicaof",
                                             "masterauth",
                                             "masteruser",
                                             "replica-read-only",
                                             "replica-announce-ip",
                                             "replica-announce-port",
                                             "replica-priority",
                                             "replica-announced",
                                             "repl-backlog-size",
                                             "repl-backlog-ttl",
                                             "repl-timeout",
                                             "repl-sync-rate"};
  std::vector<std::string> names;
  for (const auto& row : OptionTable()) {
    names.push_back(row.name);
    CHECK_FALSE(row.description.empty());
  }
  CHECK(names == expected);
  CHECK(FindOption("PORT") == FindOption("port"));
  CHECK(FindOption("Cf-Bucket-Size") != nullptr);
  CHECK(FindOption("nosuch") == nullptr);
  CHECK(FindOption("cf_bucket_size") == nullptr);

  SECTION("start-up-only options are marked immutable") {
    for (const char* name : {"bind", "port", "dir", "workers", "databases", "logfile",
                             "block-cache-size", "write-buffer-size", "rename-command", "pidfile",
                             "cf-page-size", "cluster-enabled", "cluster-config-file"}) {
      INFO(name);
      CHECK_FALSE(FindOption(name)->mutable_at_runtime);
    }
    for (const char* name : {"requirepass",
                             "appendfsync",
                             "maxclients",
                             "timeout",
                             "tcp-keepalive",
                             "loglevel",
                             "proto-max-bulk-len",
                             "client-query-buffer-limit",
                             "client-output-buffer-limit",
                             "slowlog-log-slower-than",
                             "slowlog-max-len",
                             "latency-monitor-threshold",
                             "protected-mode",
                             "cf-initial-size",
                             "cf-bucket-size",
                             "cf-max-iterations",
                             "cf-expansion-factor",
                             "cf-max-expansions",
                             "cf-sizing",
                             "cf-max-filter-bytes"}) {
      INFO(name);
      CHECK(FindOption(name)->mutable_at_runtime);
    }
  }
}

TEST_CASE("get shows defaults as CONFIG GET does", "[config]") {
  const Config cfg;
  CHECK(Get(cfg, "bind") == "127.0.0.1");
  CHECK(Get(cfg, "port") == "6379");
  CHECK(Get(cfg, "protected-mode") == "yes");
  CHECK(Get(cfg, "appendfsync") == "everysec");
  CHECK(Get(cfg, "proto-max-bulk-len") == "536870912");
  CHECK(Get(cfg, "cf-max-filter-bytes") == "68719476736");
  CHECK(Get(cfg, "requirepass").empty());
  CHECK(Get(cfg, "rename-command").empty());
}

TEST_CASE("Every row's value survives get then set on another Config", "[config]") {
  // One non-default value per row, in the form a user would write it.
  const std::vector<std::pair<std::string, std::string>> values = {
      {"bind", "0.0.0.0 ::1"},
      {"port", "6380"},
      {"tls-port", "6381"},
      {"tls-cert-file", "/etc/cuckood/server.crt"},
      {"tls-key-file", "/etc/cuckood/server.key"},
      {"tls-ca-cert-file", "/etc/cuckood/ca.crt"},
      {"tls-auth-clients", "optional"},
      {"dir", "/var/lib/cuckood"},
      {"workers", "4"},
      {"requirepass", "s3cret pass"},
      {"protected-mode", "no"},
      {"enable-debug-command", "yes"},
      {"appendfsync", "always"},
      {"maxclients", "50"},
      {"timeout", "30"},
      {"tcp-keepalive", "60"},
      {"loglevel", "warning"},
      {"logfile", "/tmp/cuckood.log"},
      {"databases", "4"},
      {"proto-max-bulk-len", "2mb"},
      {"client-query-buffer-limit", "64mb"},
      {"client-output-buffer-limit", "1gb"},
      {"group-commit", "no"},
      {"combine-commands", "no"},
      {"key-affinity", "no"},
      {"adaptive-io-threads", "no"},
      {"malloc-huge-pages", "no"},
      {"block-cache-size", "1g"},
      {"write-buffer-size", "32mb"},
      {"memtable", "skiplist"},
      {"cache-size", "64mb"},
      {"chain-index-memory", "16mb"},
      {"slowlog-log-slower-than", "-1"},
      {"slowlog-max-len", "1000"},
      {"latency-monitor-threshold", "100"},
      {"rename-command", "CONFIG \"\" FLUSHALL myflush"},
      {"pidfile", "/run/cuckood.pid"},
      {"cf-initial-size", "4096"},
      {"cf-bucket-size", "4"},
      {"cf-max-iterations", "500"},
      {"cf-expansion-factor", "2"},
      {"cf-max-expansions", "64"},
      {"cf-sizing", "load-factor"},
      {"cf-page-size", "4kb"},
      {"cf-max-filter-bytes", "1gb"},
      {"cluster-enabled", "yes"},
      {"cluster-config-file", "cluster-nodes.conf"},
      {"cluster-import-timeout", "5"},
      {"replicaof", "primary.example 6390"},
      {"masterauth", "pw"},
      {"masteruser", "repl"},
      {"replica-announce-ip", "10.0.0.7"},
      {"replica-announce-port", "7000"},
      {"replica-priority", "10"},
      {"replica-announced", "no"},
      {"repl-backlog-size", "64mb"},
      {"repl-backlog-ttl", "60"},
      {"repl-timeout", "5"},
      {"repl-sync-rate", "10mb"},
  };
  // (replica-read-only has one accepted value: see the test below.)
  REQUIRE(values.size() + 1 == OptionTable().size());
  for (const auto& [name, value] : values) {
    INFO(name << " = " << value);
    Config first;
    const std::string before = Get(first, name);
    REQUIRE_FALSE(Set(first, name, value).has_value());
    const std::string shown = Get(first, name);
    CHECK(shown != before);
    Config second;
    REQUIRE_FALSE(Set(second, name, shown).has_value());
    CHECK(Get(second, name) == shown);
  }
}

TEST_CASE("replicaof takes host and port or NO ONE; replica-read-only only yes", "[config]") {
  Config cfg;
  CHECK_FALSE(Set(cfg, "replicaof", "10.1.1.1 6380").has_value());
  CHECK(Get(cfg, "replicaof") == "10.1.1.1 6380");
  CHECK(FindOption("slaveof") == FindOption("replicaof"));
  CHECK(Set(cfg, "replicaof", "10.1.1.1 notaport").value() == "Invalid master port");
  CHECK(Set(cfg, "replicaof", "10.1.1.1 70000").value() == "Invalid master port");
  CHECK(Get(cfg, "replicaof") == "10.1.1.1 6380");
  CHECK_FALSE(Set(cfg, "replicaof", "no one").has_value());
  CHECK(Get(cfg, "replicaof").empty());
  CHECK_FALSE(Set(cfg, "replica-read-only", "yes").has_value());
  CHECK(Set(cfg, "replica-read-only", "no").has_value());
  CHECK(Get(cfg, "replica-read-only") == "yes");
  CHECK(Set(cfg, "replica-read-only", "maybe").has_value());
}

TEST_CASE("set stores values in their canonical form", "[config]") {
  Config cfg;
  SECTION("sizes are bytes") {
    REQUIRE_FALSE(Set(cfg, "block-cache-size", "1G").has_value());
    CHECK(cfg.block_cache_size == 1000000000u);
    CHECK(Get(cfg, "block-cache-size") == "1000000000");
    REQUIRE_FALSE(Set(cfg, "cf-page-size", "4kb").has_value());
    CHECK(cfg.cf_page_size == 4096u);
  }
  SECTION("booleans and enumerations are case-insensitive, stored in lower case") {
    REQUIRE_FALSE(Set(cfg, "protected-mode", "NO").has_value());
    CHECK_FALSE(cfg.protected_mode);
    REQUIRE_FALSE(Set(cfg, "appendfsync", "ALWAYS").has_value());
    CHECK(cfg.appendfsync == "always");
    CHECK(Get(cfg, "appendfsync") == "always");
  }
  SECTION("bind keeps addresses separated by single spaces") {
    REQUIRE_FALSE(Set(cfg, "bind", "127.0.0.1   ::1").has_value());
    CHECK(cfg.bind == "127.0.0.1 ::1");
  }
  SECTION("rename-command adds pairs and a later rename of the same command replaces it") {
    REQUIRE_FALSE(Set(cfg, "rename-command", "CONFIG \"\"").has_value());
    REQUIRE_FALSE(Set(cfg, "rename-command", "FLUSHALL myflush").has_value());
    REQUIRE_FALSE(Set(cfg, "rename-command", "flushall otherflush").has_value());
    CHECK(cfg.rename_commands == std::vector<std::string>{"CONFIG ", "flushall otherflush"});
    CHECK(Get(cfg, "rename-command") == "CONFIG \"\" flushall otherflush");
    CHECK(Set(cfg, "rename-command", "CONFIG") == "wrong number of arguments");
  }
  SECTION("client-output-buffer-limit takes the normal class's hard limit") {
    REQUIRE_FALSE(Set(cfg, "client-output-buffer-limit", "normal 16mb 8mb 60").has_value());
    CHECK(cfg.client_output_buffer_limit == 16u << 20);
    REQUIRE_FALSE(Set(cfg, "client-output-buffer-limit",
                      "replica 256mb 64mb 60 normal 0 0 0 pubsub 32mb 8mb 60")
                      .has_value());
    CHECK(cfg.client_output_buffer_limit == 0u);
    REQUIRE_FALSE(Set(cfg, "client-output-buffer-limit", "pubsub 32mb 8mb 60").has_value());
    CHECK(cfg.client_output_buffer_limit == 0u);
    CHECK(Set(cfg, "client-output-buffer-limit", "normal 1 2") ==
          "Wrong number of arguments in buffer limit configuration.");
    CHECK(Set(cfg, "client-output-buffer-limit", "vip 1 2 3") ==
          "Invalid client class specified in buffer limit configuration.");
    CHECK(Set(cfg, "client-output-buffer-limit", "normal 1x 2 3") ==
          "Error in hard, soft or soft_seconds setting in buffer limit configuration.");
  }
}

TEST_CASE("set rejects bad values with Redis's CONFIG SET texts", "[config]") {
  Config cfg;
  const Config before = cfg;
  CHECK(Set(cfg, "port", "abc") == "argument couldn't be parsed into an integer");
  CHECK(Set(cfg, "port", "1.5") == "argument couldn't be parsed into an integer");
  CHECK(Set(cfg, "port", "65536") == "argument must be between 0 and 65535 inclusive");
  CHECK(Set(cfg, "maxclients", "0") == "argument must be between 1 and 2147483647 inclusive");
  CHECK(Set(cfg, "databases", "0") == "argument must be between 1 and 65535 inclusive");
  CHECK(Set(cfg, "slowlog-log-slower-than", "-2") ==
        "argument must be between -1 and 9223372036854775807 inclusive");
  CHECK(Set(cfg, "block-cache-size", "lots") == "argument must be a memory value");
  CHECK(Set(cfg, "proto-max-bulk-len", "1000") ==
        "argument must be between 1048576 and 9223372036854775807 inclusive");
  CHECK(Set(cfg, "protected-mode", "maybe") == "argument must be 'yes' or 'no'");
  CHECK(Set(cfg, "appendfsync", "sometimes") ==
        "argument(s) must be one of the following: always, everysec, no");
  CHECK(Set(cfg, "loglevel", "loud") ==
        "argument(s) must be one of the following: debug, verbose, notice, warning");
  CHECK(Set(cfg, "cf-sizing", "exact") ==
        "argument(s) must be one of the following: redisbloom, load-factor");
  CHECK(Set(cfg, "dir", "").has_value());
  CHECK(Set(cfg, "bind", "").has_value());
  CHECK(Get(cfg, "port") == Get(before, "port"));
  CHECK(cfg.appendfsync == before.appendfsync);
}

TEST_CASE("cf-* options follow RedisBloom's ranges, both ends inclusive", "[config]") {
  Config cfg;
  struct Range {
    const char* name;
    const char* lo;
    const char* hi;
    const char* below;
    const char* above;
  };
  for (const Range& r : {
           Range{"cf-bucket-size", "1", "255", "0", "256"},
           Range{"cf-max-iterations", "1", "65535", "0", "65536"},
           Range{"cf-expansion-factor", "0", "32768", "-1", "32769"},
           Range{"cf-max-expansions", "1", "65536", "0", "65537"},
           Range{"cf-page-size", "64", "1048576", "63", "1048577"},
           Range{"cf-max-filter-bytes", "1048576", "1099511627776", "1048575", "1099511627777"},
       }) {
    INFO(r.name);
    Config c;
    CHECK_FALSE(Set(c, r.name, r.lo).has_value());
    CHECK(Get(c, r.name) == r.lo);
    CHECK_FALSE(Set(c, r.name, r.hi).has_value());
    CHECK(Get(c, r.name) == r.hi);
    const std::string expected =
        std::string("argument must be between ") + r.lo + " and " + r.hi + " inclusive";
    CHECK(Set(c, r.name, r.below) == expected);
    CHECK(Set(c, r.name, r.above) == expected);
    CHECK(Get(c, r.name) == r.hi);
  }

  SECTION("cf-initial-size is at least twice the current bucket size") {
    CHECK(Set(cfg, "cf-initial-size", "3") ==
          "argument must be between 4 and 1073741824 inclusive");
    CHECK_FALSE(Set(cfg, "cf-initial-size", "4").has_value());
    CHECK_FALSE(Set(cfg, "cf-initial-size", "1073741824").has_value());
    CHECK(Set(cfg, "cf-initial-size", "1073741825").has_value());
    REQUIRE_FALSE(Set(cfg, "cf-bucket-size", "8").has_value());
    CHECK(Set(cfg, "cf-initial-size", "15") ==
          "argument must be between 16 and 1073741824 inclusive");
    CHECK_FALSE(Set(cfg, "cf-initial-size", "16").has_value());
  }
}

TEST_CASE("LoadConfigFile reads Redis-style lines", "[config]") {
  TempDir dir;
  Config cfg;

  SECTION("comments, blank lines, case-insensitive names and quoting") {
    const std::string path = dir.Write("a.conf",
                                       "# a comment\n"
                                       "\n"
                                       "   # an indented comment\n"
                                       "PORT 7000\r\n"
                                       "  Bind   127.0.0.1 ::1  \n"
                                       "requirepass \"pa ss\\\"word\\x41\\n\"\n"
                                       "logfile 'it\\'s here.log'\n"
                                       "pidfile \"\"\n"
                                       "rename-command CONFIG \"\"\n"
                                       "rename-command FLUSHALL 'myflush'\n"
                                       "client-output-buffer-limit normal 1mb 0 0\n"
                                       "block-cache-size 128MB\n"
                                       "appendfsync always\n");
    REQUIRE(LoadConfigFile(path, &cfg) == std::nullopt);
    CHECK(cfg.port == 7000);
    CHECK(cfg.bind == "127.0.0.1 ::1");
    CHECK(cfg.requirepass == "pa ss\"wordA\n");
    CHECK(cfg.logfile == "it's here.log");
    CHECK(cfg.pidfile.empty());
    CHECK(cfg.rename_commands == std::vector<std::string>{"CONFIG ", "FLUSHALL myflush"});
    CHECK(cfg.client_output_buffer_limit == 1u << 20);
    CHECK(cfg.block_cache_size == 128u << 20);
    CHECK(cfg.appendfsync == "always");
  }

  SECTION("a later line overrides an earlier one") {
    const std::string path = dir.Write("a.conf", "port 7000\nport 7001\n");
    REQUIRE(LoadConfigFile(path, &cfg) == std::nullopt);
    CHECK(cfg.port == 7001);
  }

  SECTION("include reads another file relative to the including file's directory") {
    dir.Write("conf.d/base.conf", "port 7100\ndatabases 4\n");
    dir.Write("conf.d/nested.conf", "include base.conf\nworkers 3\n");
    const std::string path = dir.Write("main.conf",
                                       "port 1\ninclude conf.d/nested.conf\n"
                                       "databases 8\n");
    REQUIRE(LoadConfigFile(path, &cfg) == std::nullopt);
    CHECK(cfg.port == 7100);
    CHECK(cfg.databases == 8);
    CHECK(cfg.workers == 3);
  }

  SECTION("errors name the file and line and leave the Config unchanged") {
    auto check_error = [&](const std::string& text, const std::string& where,
                           const std::string& what) {
      INFO(text);
      const std::string path = dir.Write("bad.conf", text);
      Config c;
      auto err = LoadConfigFile(path, &c);
      REQUIRE(err.has_value());
      CHECK_THAT(*err, Catch::Contains(path + ":" + where + ": ") && Catch::Contains(what));
      CHECK(c.port == 6379);
    };
    check_error("port 7000\n\n# x\nfoo bar\n", "4", "Bad directive or wrong number of arguments");
    check_error("port 7000\nport\n", "2", "Bad directive or wrong number of arguments");
    check_error("port 7000 7001\n", "1", "Bad directive or wrong number of arguments");
    check_error("port 7000\nrename-command CONFIG\n", "2",
                "Bad directive or wrong number of arguments");
    check_error("port 7000\nport 70000\n", "2",
                "'port' argument must be between 0 and 65535 inclusive");
    check_error("port 7000\nrequirepass \"abc\n", "2", "Unbalanced quotes");
    check_error("port 7000\nrequirepass \"abc\"def\n", "2", "Unbalanced quotes");
    check_error("port 7000\ninclude missing.conf\n", "2", "cannot open config file");
    check_error("port 7000\ninclude bad.conf\n", "2", "include nesting");
  }

  SECTION("a missing file is an error") {
    auto err = LoadConfigFile((dir.path() / "none.conf").string(), &cfg);
    REQUIRE(err.has_value());
    CHECK_THAT(*err, Catch::Contains("none.conf"));
  }
}

TEST_CASE("conf/cuckood.conf documents every option with its default", "[config]") {
  const fs::path conf = RepoRoot() / "conf" / "cuckood.conf";
  REQUIRE(fs::exists(conf));
  Config loaded;
  loaded.port = 1;  // proves the file sets it
  REQUIRE(LoadConfigFile(conf.string(), &loaded) == std::nullopt);
  const Config defaults;
  std::ifstream in(conf);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& row : OptionTable()) {
    INFO(row.name);
    CHECK(row.get(loaded) == row.get(defaults));
    const bool documented = text.find("\n" + row.name + " ") != std::string::npos ||
                            text.find("# " + row.name + " ") != std::string::npos;
    CHECK(documented);
  }
}

TEST_CASE("ParseCommandLine applies the config file, then the flags", "[config]") {
  TempDir dir;
  const std::string path = dir.Write("c.conf",
                                     "port 7000\nworkers 2\nloglevel debug\n"
                                     "rename-command CONFIG \"\"\n");
  Config cfg;
  int exit_code = -1;
  bool check = true;

  SECTION("--config FILE with overriding flags") {
    CliArgv a{"cuckood",
              "--port",
              "7001",
              "--config",
              path,
              "--slowlog-log-slower-than",
              "-1",
              "--bind",
              "0.0.0.0",
              "::1",
              "--log-level",
              "warning",
              "--cf-page-size=4kb",
              "--rename-command",
              "FLUSHALL",
              "",
              "--appendfsync",
              "no",
              "--appendfsync",
              "always"};
    REQUIRE(ParseCommandLine(a.argc(), a.argv(), &cfg, &exit_code, &check));
    CHECK(exit_code == 0);
    CHECK_FALSE(check);
    CHECK(cfg.port == 7001);
    CHECK(cfg.workers == 2);
    CHECK(cfg.loglevel == "warning");
    CHECK(cfg.slowlog_log_slower_than == -1);
    CHECK(cfg.bind == "0.0.0.0 ::1");
    CHECK(cfg.cf_page_size == 4096u);
    CHECK(cfg.rename_commands == std::vector<std::string>{"CONFIG ", "FLUSHALL "});
    CHECK(cfg.appendfsync == "always");
  }

  SECTION("a positional config file, --check, and the file name reported back") {
    CliArgv a{"cuckood", path, "--check", "--workers", "5"};
    std::string file;
    REQUIRE(ParseCommandLine(a.argc(), a.argv(), &cfg, &exit_code, &check, &file));
    CHECK(check);
    CHECK(file == path);
    CHECK(cfg.port == 7000);
    CHECK(cfg.workers == 5);
  }

  SECTION("no arguments keep the defaults") {
    CliArgv a{"cuckood"};
    std::string file = "x";
    REQUIRE(ParseCommandLine(a.argc(), a.argv(), &cfg, &exit_code, &check, &file));
    CHECK_FALSE(check);
    CHECK(file.empty());
    CHECK(cfg.port == 6379);
  }

  SECTION("--version and --help print to stdout and ask to exit with code 0") {
    for (const char* flag : {"--version", "--help"}) {
      CliArgv a{"cuckood", flag};
      exit_code = -1;
      std::ostringstream captured;
      std::streambuf* saved = std::cout.rdbuf(captured.rdbuf());
      const bool run = ParseCommandLine(a.argc(), a.argv(), &cfg, &exit_code, &check);
      std::cout.rdbuf(saved);
      CHECK_FALSE(run);
      CHECK(exit_code == 0);
      CHECK_THAT(captured.str(),
                 Catch::Contains(std::string(flag) == "--version" ? "cuckood v0.1.0"
                                                                  : "--cf-max-filter-bytes"));
    }
  }

  SECTION("bad input throws with a clear message") {
    auto throws = [&](std::initializer_list<std::string> args, const std::string& what) {
      CliArgv a(args);
      Config c;
      CHECK_THROWS_WITH(ParseCommandLine(a.argc(), a.argv(), &c, &exit_code, &check),
                        Catch::Contains(what));
    };
    throws({"cuckood", "--port", "x"}, "--port: argument couldn't be parsed into an integer");
    throws({"cuckood", "--appendfsync", "x"}, "must be one of the following");
    throws({"cuckood", "--no-such-flag", "1"}, "--no-such-flag");
    throws({"cuckood", "--port"}, "port");
    throws({"cuckood", "--config", (dir.path() / "none.conf").string()}, "none.conf");
    const std::string bad = dir.Write("bad.conf", "port 7000\nnope 1\n");
    throws({"cuckood", "--config", bad}, bad + ":2: Bad directive");
  }
}

}  // namespace
}  // namespace cuckood::server
