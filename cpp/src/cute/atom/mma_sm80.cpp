#include "cute/atom/mma_sm80.h"

#include "cute/pointer.h"
#include "dsl/dtype.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;
using L::IntTuple;
using L::Layout;

namespace {

IntTuple T(std::initializer_list<IntTuple> e) { return IntTuple(std::vector<IntTuple>(e)); }

// The thread-value layouts of CuTe's mma_traits_sm80.hpp / mma_traits_sm89.hpp. Threads are
// (threadID_in_group, groupID) = (4, 8); the index is column-major in the operand's tile.
// (T32,V4) -> (M16,N8): the C/D layout of every m16n8 atom.
Layout sm80_16x8_row() { return Layout(T({T({4, 8}), T({2, 2})}), T({T({32, 1}), T({16, 8})})); }
// (T32,V2) -> (N8,K8)
Layout sm80_8x8_row() { return Layout(T({T({4, 8}), 2}), T({T({16, 1}), 8})); }

[[noreturn]] void invalid(const std::string& msg) { throw dsl::UserError("INVALID_MMA_OP", msg); }

}  // namespace

MmaAtom make_mma_f16bf16(ir::Type ab, ir::Type acc, const std::vector<int64_t>& shape) {
  if (!ab->is_f16() && !ab->is_bf16())
    invalid("MmaF16BF16Op: ab_dtype must be Float16 or BFloat16, got " + mma_type_name(ab));
  if (!acc->is_f16() && !acc->is_f32())
    invalid("MmaF16BF16Op: acc_dtype must be Float16 or Float32, got " + mma_type_name(acc));
  if (ab->is_bf16() && !acc->is_f32())
    invalid("MmaF16BF16Op: acc_dtype must be Float32 when ab_dtype is BFloat16, got " + mma_type_name(acc));
  bool k8 = shape == std::vector<int64_t>{16, 8, 8}, k16 = shape == std::vector<int64_t>{16, 8, 16};
  if (!k8 && !k16) invalid("MmaF16BF16Op: shape_mnk must be (16, 8, 8) or (16, 8, 16), got " + mma_shape_text(shape));
  MmaAtom a;
  a.kind = MmaKind::F16BF16;
  a.a_type = a.b_type = ab;
  a.c_type = acc;
  a.m = 16, a.n = 8, a.k = k8 ? 8 : 16;
  a.thr_id = Layout(32, 1);
  a.layout_c_tv = sm80_16x8_row();
  if (k8) {
    a.layout_a_tv = sm80_16x8_row();
    a.layout_b_tv = sm80_8x8_row();
  } else {
    a.layout_a_tv = Layout(T({T({4, 8}), T({2, 2, 2})}), T({T({32, 1}), T({16, 8, 128})}));
    a.layout_b_tv = Layout(T({T({4, 8}), T({2, 2})}), T({T({16, 1}), T({8, 64})}));
  }
  return a;
}

MmaAtom make_mma_fp8(ir::Type ab, ir::Type acc, const std::vector<int64_t>& shape) {
  if (!ab->is_fp8()) invalid("MmaFP8Op: ab_dtype must be Float8E4M3FN or Float8E5M2, got " + mma_type_name(ab));
  if (!acc->is_f32()) invalid("MmaFP8Op: acc_dtype must be Float32, got " + mma_type_name(acc));
  if (shape != std::vector<int64_t>{16, 8, 32}) invalid("MmaFP8Op: shape_mnk must be (16, 8, 32), got " + mma_shape_text(shape));
  MmaAtom a;
  a.kind = MmaKind::FP8;
  a.a_type = a.b_type = ab;
  a.c_type = acc;
  a.m = 16, a.n = 8, a.k = 32;
  a.thr_id = Layout(32, 1);
  a.layout_a_tv = Layout(T({T({4, 8}), T({4, 2, 2})}), T({T({64, 1}), T({16, 8, 256})}));
  a.layout_b_tv = Layout(T({T({4, 8}), T({4, 2})}), T({T({32, 1}), T({8, 128})}));
  a.layout_c_tv = sm80_16x8_row();
  return a;
}

std::vector<ir::Value*> mma_sync_call(const MmaAtom& atom, const std::vector<dsl::Num>& av,
                                      const std::vector<dsl::Num>& bv, const std::vector<dsl::Num>& cv) {
  ir::Builder& bld = trace_builder("gemm");
  std::vector<ir::Value*> operands;
  for (const std::vector<dsl::Num>* vals : {&av, &bv, &cv})
    for (const dsl::Num& v : *vals) operands.push_back(dsl::materialize(v));
  ir::Op* op = bld.create(ir::OpCode::MmaSync, operands, std::vector<ir::Type>(size_t(atom.values_c()), atom.c_type));
  op->ints = {atom.m, atom.n, atom.k};
  std::vector<ir::Value*> results;
  for (auto& r : op->results) results.push_back(r.get());
  return results;
}

std::string mma_sm80_op_string(const MmaAtom& a) {
  if (a.kind == MmaKind::FP8)
    return "warp-level FP8 MMA Operation\n  A/B data type = " + mma_type_name(a.a_type) + "\n  Accumulator data type = " +
           mma_type_name(a.c_type) + "\n  Instruction shape MNK = " + mma_shape_text(a.shape_mnk());
  return "warp-level F16/BF16 MMA Operation\n  A/B data type = " + mma_type_name(a.a_type) +
         "\n  Accumulator data type = " + mma_type_name(a.c_type) + "\n  Instruction shape MNK = " +
         mma_shape_text(a.shape_mnk());
}

}  // namespace opencute::cute
