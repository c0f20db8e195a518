// Runs a host function of the IR on the CPU: the traced body of a @jit function (argument
// set-up, arithmetic, loops, printf, loads and stores on host memory, kernel launches). Host
// programs are tiny, so a direct walk over the structured IR is fast enough and needs no host
// compiler at run time.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"
#include "ir/scalar_semantics.h"

namespace opencute::emulator {

struct LaunchRequest {
  const std::string* kernel;
  unsigned grid[3];
  unsigned block[3];
  unsigned cluster[3];
  bool has_cluster;
  unsigned smem;
  void* stream;
  std::vector<ir::Type> arg_types;
  std::vector<ir::Scalar> args;
};

class LaunchHandler {
 public:
  virtual ~LaunchHandler() = default;
  virtual void launch(const LaunchRequest& request) = 0;
};

struct ExecutionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Formats one printf call the way the device's printf does, into `out`.
void format_printf(const std::string& c_format, const std::vector<ir::Type>& types,
                   const std::vector<ir::Scalar>& values, std::string* out);

class HostInterpreter {
 public:
  explicit HostInterpreter(const ir::Function& fn);
  std::vector<ir::Scalar> run(const std::vector<ir::Scalar>& args, LaunchHandler* launcher);
  bool has_printf() const { return has_printf_; }

 private:
  struct Frame;
  void number(const ir::Block& b);
  void exec_block(const ir::Block& b, Frame& fr);
  void exec(const ir::Op& op, Frame& fr);

  const ir::Function& fn_;
  std::unordered_map<const ir::Value*, int> slot_;
  int num_slots_ = 0;
  bool has_printf_ = false;
};

}  // namespace opencute::emulator
