#include "support/log.h"

#include "support/env.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace opencute::support {
namespace {

struct LogConfig {
  bool console = false;
  std::string file;
  int level = 10;
};

std::mutex& log_mutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}

LogConfig read_config() {
  LogConfig c;
  c.console = env_flag("CUTE_DSL_LOG_TO_CONSOLE");
  if (const char* v = std::getenv("CUTE_DSL_LOG_TO_FILE")) c.file = v;
  if (const char* v = std::getenv("CUTE_DSL_LOG_LEVEL")) c.level = std::atoi(v);
  return c;
}

LogConfig& config() {
  static LogConfig* c = new LogConfig(read_config());
  return *c;
}

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Debug: return "DEBUG";
    case LogLevel::Info: return "INFO";
    case LogLevel::Warning: return "WARNING";
    case LogLevel::Error: return "ERROR";
    case LogLevel::Critical: return "CRITICAL";
  }
  return "LOG";
}

}  // namespace

void reload_log_configuration() {
  std::lock_guard<std::mutex> lock(log_mutex());
  config() = read_config();
}

bool log_enabled(LogLevel level) {
  const LogConfig& c = config();
  return (c.console || !c.file.empty()) && c.level > 0 && int(level) >= c.level;
}

void log(LogLevel level, const std::string& message) {
  if (!log_enabled(level)) return;
  std::lock_guard<std::mutex> lock(log_mutex());
  const LogConfig& c = config();
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  std::string line = std::string(stamp) + " - opencute - " + level_name(level) + " - " + message + "\n";
  if (c.console) {
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  }
  if (!c.file.empty()) {
    if (std::FILE* f = std::fopen(c.file.c_str(), "a")) {
      std::fputs(line.c_str(), f);
      std::fclose(f);
    }
  }
}

}  // namespace opencute::support
