// cuckood: a Redis-protocol server for RedisBloom-compatible cuckoo filters on RocksDB.
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "core/sanitizers.h"
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

// glibc's allocator, set for the in-memory cache (malloc-huge-pages; docs/benchmarks/README.md):
// one arena, whose memory glibc asks the kernel to back with transparent huge pages. The cache's
// pages and index are hundreds of MiB read at random, and with 4 KiB pages nearly every lookup
// also missed the TLB. glibc reads these settings (GLIBC_TUNABLES) only when a process starts,
// so the server executes itself again, once, with them added: the same pid, arguments and open
// descriptors. An operator's own glibc.malloc.hugetlb or arena_max setting is left as it is, as
// is a process with LD_PRELOAD set (a preloaded allocator or tool); when the executable cannot be
// run again, the server goes on with glibc's defaults.
void TuneAllocator(char** argv) {
  if (cuckood::core::kSanitized) {
    return;  // (a sanitizer's allocator serves: glibc's settings do not reach it)
  }
  static constexpr char kTunables[] = "glibc.malloc.hugetlb=1:glibc.malloc.arena_max=1";
  if (const char* preload = std::getenv("LD_PRELOAD"); preload != nullptr && *preload != 0) {
    return;  // (a preloaded allocator or tool, such as valgrind's: left as the operator set it)
  }
  const char* now = std::getenv("GLIBC_TUNABLES");
  const std::string have = now != nullptr ? now : "";
  if (have.find("glibc.malloc.hugetlb=") != std::string::npos ||
      have.find("glibc.malloc.arena_max=") != std::string::npos) {
    return;  // (set already: by the operator, or by this function before the exec)
  }
  char exe[4096] = {0};
  // (the real path, not /proc/self/exe: the process's name, as ps and pgrep show it, is the
  // executable's file name)
  if (readlink("/proc/self/exe", exe, sizeof(exe) - 1) <= 0 || access(exe, X_OK) != 0) {
    return;
  }
  const std::string want = have.empty() ? kTunables : have + ":" + kTunables;
  if (setenv("GLIBC_TUNABLES", want.c_str(), 1) != 0) {
    return;
  }
  std::fflush(nullptr);
  execv(exe, argv);
  // (not run again: the environment goes back to what it was)
  if (now != nullptr) {
    setenv("GLIBC_TUNABLES", have.c_str(), 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
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
  if (cfg.malloc_huge_pages) {
    TuneAllocator(argv);
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
