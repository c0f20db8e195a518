// Runs a host function of the IR on the CPU: the traced body of a @jit function (argument
// set-up, arithmetic, loops, printf, loads and stores on host memory, kernel launches). Host
// programs are tiny and need no host compiler: construction flattens the structured IR into
// steps whose operands are register numbers, so a call touches no maps and, without loops,
// allocates only its register file. A compiled add_one call spends well under a microsecond here.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "ir/scalar_semantics.h"

namespace opencute::emulator {

struct LaunchRequest {
  const ir::Op* op;  // the Launch op: identifies the kernel (str_attr) across calls
  unsigned grid[3];
  unsigned block[3];
  unsigned cluster[3];
  bool has_cluster;
  bool cooperative = false;  // all blocks must be co-resident (cooperative launch)
  bool pdl = false;          // programmatic stream serialization (programmatic dependent launch)
  // Launch attributes recording an event (cudaEvent_t / CUevent handles; null when absent).
  void* completion_event = nullptr;
  int completion_event_flags = 0;
  void* programmatic_event = nullptr;
  int programmatic_event_flags = 0;
  int programmatic_trigger_at_block_start = 0;
  unsigned smem = 0;
  void* stream = nullptr;
  size_t num_args = 0;
  const ir::Type* arg_types = nullptr;  // num_args entries
  const ir::Scalar* args = nullptr;     // num_args entries
  // Every argument is a pointer or an integer of at most 64 bits: a GPU launch passes each in
  // place (the low bytes of its 64-bit value) without looking at the types (decided once).
  bool args_in_place = false;
  const std::string& kernel() const { return op->str_attr; }
};

struct TmaDescriptor;

class LaunchHandler {
 public:
  virtual ~LaunchHandler() = default;
  virtual void launch(const LaunchRequest& request) = 0;
  // A TMA descriptor the host program made (tma_encode): kernels running on a GPU need the
  // driver's encoding in d.tensor_map; the emulator reads the other fields.
  virtual void encode_tma(TmaDescriptor& d, ir::Type element) { (void)d, (void)element; }
};

// An error of a running program. `file` / `line`: the user's source of the op at fault when known
// ("" / 0 otherwise); the Python error shows it as its source frame.
struct ExecutionError : std::runtime_error {
  explicit ExecutionError(const std::string& what, std::string file_ = "", int line_ = 0)
      : std::runtime_error(what), file(std::move(file_)), line(line_) {}
  std::string file;
  int line;
};

// An operation the CPU emulator cannot run (inline PTX), with where the user wrote it.
struct UnsupportedOnEmulator : ExecutionError {
  using ExecutionError::ExecutionError;
};

// A failed Assert op (host or device): also carries where the user wrote the assertion.
struct AssertionFailure : ExecutionError {
  using ExecutionError::ExecutionError;
};

// Formats one printf call the way the device's printf does, into `out`.
void format_printf(const std::string& c_format, const std::vector<ir::Type>& types,
                   const std::vector<ir::Scalar>& values, std::string* out);

class HostInterpreter {
 public:
  explicit HostInterpreter(const ir::Function& fn);
  std::vector<ir::Scalar> run(const std::vector<ir::Scalar>& args, LaunchHandler* launcher) const {
    return run(args.data(), args.size(), launcher);
  }
  // The call path's form: no allocation for a program without loops, allocas or results
  // whose register file fits on the stack.
  std::vector<ir::Scalar> run(const ir::Scalar* args, size_t num_args, LaunchHandler* launcher) const;
  bool has_printf() const { return has_printf_; }
  bool has_loops() const { return has_loops_; }

 private:
  struct Step {
    const ir::Op* op;
    std::vector<int> in;       // operand registers
    std::vector<int> out;      // result registers
    std::vector<int> regions;  // indices into blocks_
    std::vector<ir::Type> in_types;
    bool launch_args_in_place = false;  // a Launch whose kernel arguments are all pointers or integers
  };
  struct FlatBlock {
    std::vector<int> args;  // block-argument registers
    std::vector<Step> steps;
  };
  struct Frame;

  int flatten(const ir::Block& b);
  int reg(const ir::Value* v);
  void exec_block(int block, Frame& fr) const;
  void exec(const Step& s, Frame& fr) const;
  // Launch step `s` with its operands read through `in(i)`; `kernel_args`, when given, are its
  // kernel arguments already in operand order (else they are gathered through `in`).
  template <class Operand>
  void launch(const Step& s, const Operand& in, const ir::Scalar* kernel_args, LaunchHandler* launcher) const;
  void find_direct_launch();

  std::vector<FlatBlock> blocks_;        // blocks_[0] is the body
  std::vector<ir::Scalar> initial_regs_; // constants pre-evaluated, everything else zero
  std::unordered_map<const ir::Value*, int> numbering_;  // emptied after construction
  bool has_printf_ = false;
  bool has_loops_ = false;
  // A body that is one launch of the host arguments, in order, and constants (the usual @jit
  // wrapper of a kernel) runs that launch without a register file: `direct_launch_` is its step
  // and `direct_operands_` says, per launch operand before the kernel arguments, which host
  // argument it is (-1: a constant, in initial_regs_).
  const Step* direct_launch_ = nullptr;
  std::vector<int> direct_operands_;
};

}  // namespace opencute::emulator
