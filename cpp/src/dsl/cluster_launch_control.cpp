#include "dsl/cluster_launch_control.h"

#include <string>

#include "dsl/dtype.h"
#include "dsl/tracer.h"

namespace opencute::dsl {
namespace {

ir::Builder& clc_builder(const std::string& what) {
  Tracer& t = Tracer::require(what.c_str());
  if (!t.in_kernel()) throw UserError("ARCH_OUTSIDE_KERNEL", what + " is only available inside a @cute.kernel");
  const support::Arch& arch = Tracer::current_target_arch();
  if (!arch.empty() && arch.known() && !arch.has_cluster_launch_control())
    throw UserError("UNSUPPORTED_ARCH", what + " needs sm_100 or newer (cluster launch control), but the program is "
                                               "compiled for " + arch.name);
  return t.builder();
}

ir::Value* shared_pointer(const Num& p, const std::string& what, const char* operand) {
  if (!p.type || !p.type->is_pointer() ||
      (p.type->space != ir::AddrSpace::Smem && p.type->space != ir::AddrSpace::Generic))
    throw UserError("TYPE_MISMATCH", what + ": " + operand + " must be a pointer into shared memory, got " +
                                         (p.type ? dtype_name(p.type) : std::string("a non-pointer")));
  return materialize(p);
}

}  // namespace

void clc_try_cancel(const Num& response, const Num& mbar, bool multicast) {
  const std::string what = "issue_clc_query";
  ir::Builder& b = clc_builder(what);
  ir::Op* op = b.create(ir::OpCode::ClcTryCancel,
                        {shared_pointer(response, what, "the response pointer"),
                         shared_pointer(mbar, what, "the mbarrier pointer")},
                        {});
  op->ints = {multicast ? 1 : 0};
}

std::vector<Num> clc_query_cancel(const Num& response) {
  const std::string what = "clc_response";
  ir::Builder& b = clc_builder(what);
  ir::Op* op = b.create(ir::OpCode::ClcQueryCancel, {shared_pointer(response, what, "the response pointer")},
                        {ir::i32(), ir::i32(), ir::i32(), ir::bool_type()});
  std::vector<Num> out;
  for (int k = 0; k < 4; ++k) out.push_back(Num::of_value(op->result(k)));
  return out;
}

}  // namespace opencute::dsl
