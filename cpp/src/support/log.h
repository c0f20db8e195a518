// The DSL's log, configured like the CuTe DSL's: CUTE_DSL_LOG_TO_CONSOLE=1 (stderr) and/or
// CUTE_DSL_LOG_TO_FILE=<path>, filtered by CUTE_DSL_LOG_LEVEL (Python logging's numbers: 10
// debug, 20 info, 30 warning, 40 error, 50 critical, or those names in any case, WARN too;
// default 10; 0 or below disables; anything else warns once on stderr and keeps the default).
// Lines read "<time> - opencute - <LEVEL> - <message>".
#pragma once
#include <string>

namespace opencute::support {

enum class LogLevel { Debug = 10, Info = 20, Warning = 30, Error = 40, Critical = 50 };

bool log_enabled(LogLevel level);
void log(LogLevel level, const std::string& message);
// Re-reads the environment (tests change it within one process).
void reload_log_configuration();

}  // namespace opencute::support
