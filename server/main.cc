// cuckood: a Redis-protocol server for RedisBloom-compatible cuckoo filters on RocksDB.
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "server/config.h"
#include "server/live_config.h"
#include "server/server.h"
#include "storage/checker.h"
#include "storage/engine.h"

namespace {

void SetupLogging(const cuckood::server::Config& cfg) {
  std::shared_ptr<spdlog::logger> logger;
  if (cfg.logfile.empty()) {
    logger = spdlog::stdout_logger_mt("cuckood");
  } else {
    logger = spdlog::basic_logger_mt("cuckood", cfg.logfile);
  }
  spdlog::set_default_logger(logger);
  spdlog::set_level(cuckood::server::SpdlogLevel(cfg.loglevel));
  spdlog::flush_on(spdlog::level::info);
}

// --compact: a full RocksDB compaction of the database in cfg.dir (the server must not run:
// RocksDB's lock file refuses a second opener).
int CompactOffline(const cuckood::server::Config& cfg) {
  namespace st = cuckood::storage;
  st::EngineOptions eo;
  eo.dir = cfg.dir;
  eo.fsync = st::FsyncMode::kNo;
  auto engine = st::Engine::Open(eo);
  if (!engine.ok()) {
    std::cerr << "cuckood: cannot open " << cfg.dir << ": " << engine.status().message() << "\n";
    return 1;
  }
  auto s = (*engine)->Flush();  // (what the WAL replayed into the memtables, first)
  if (s.ok()) {
    s = (*engine)->CompactAll();
  }
  (*engine)->Close();
  if (!s.ok()) {
    std::cerr << "cuckood: compaction failed: " << s.message() << "\n";
    return 1;
  }
  std::cout << "compacted " << cfg.dir << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using cuckood::server::Config;
  Config cfg;
  bool check_mode = false;
  bool compact_mode = false;
  std::string config_file;
  try {
    int exit_code = 0;
    if (!cuckood::server::ParseCommandLine(argc, argv, &cfg, &exit_code, &check_mode, &config_file,
                                           &compact_mode)) {
      return exit_code;
    }
  } catch (const std::exception& e) {
    std::cerr << "cuckood: " << e.what() << "\n";
    return 2;
  }
  if (check_mode) {
    auto report = cuckood::storage::CheckDatabase(cfg.dir, std::cout);
    return report.ok() ? 0 : 1;
  }
  if (compact_mode) {
    return CompactOffline(cfg);
  }
  try {
    SetupLogging(cfg);
    cuckood::server::Server server(cfg);
    char exe[4096] = {0};
    if (readlink("/proc/self/exe", exe, sizeof(exe) - 1) > 0) {
      server.process().executable = exe;
    }
    if (!config_file.empty()) {
      // (absolute: CONFIG REWRITE writes this file whatever the working directory is then)
      server.process().config_file = std::filesystem::absolute(config_file).string();
    }
    server.Start();
    if (!cfg.pidfile.empty()) {
      std::ofstream(cfg.pidfile) << getpid() << "\n";
    }
    server.Wait();
    if (!cfg.pidfile.empty()) {
      std::remove(cfg.pidfile.c_str());
    }
    spdlog::info("cuckood is now ready to exit, bye bye...");
  } catch (const std::exception& e) {
    spdlog::critical("fatal: {}", e.what());
    std::cerr << "cuckood: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
