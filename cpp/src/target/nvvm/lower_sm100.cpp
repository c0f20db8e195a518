// NVVM lowering of the SM100 tensor-memory and tcgen05 family, as inline PTX (the forms of CuTe
// C++'s copy_sm100.hpp, mma_sm100_umma.hpp and tmem_allocator_sm100.hpp):
//   TmemAlloc       tcgen05.alloc.cta_group::N.sync.aligned.shared::cta.b32 [dst], ncols;
//   TmemDealloc     tcgen05.dealloc.cta_group::N.sync.aligned.b32 taddr, ncols;
//   TmemRelinquish  tcgen05.relinquish_alloc_permit.cta_group::N.sync.aligned;
//   Tcgen05Mma      tcgen05.mma.cta_group::N.kind::K [d], a-desc | [a-tmem], b-desc, idesc, p;
//                   block-scaled: ...kind::K.block_scale.scale_vec::NX [d], a, b, idesc, [sfa], [sfb], p;
//   Tcgen05Commit   tcgen05.commit.cta_group::N.mbarrier::arrive::one.shared::cluster[.multicast::cluster].b64 [bar][, mask];
//                   (both issued by one lane: elect.sync over the active lanes, as the CuTe DSL does)
//   Tcgen05Ld / St  tcgen05.ld.sync.aligned.<shape>.xR[.pack::16b].b32 {r...}, [taddr][, split];
//                   tcgen05.st.sync.aligned.<shape>.xR[.unpack::16b].b32 [taddr][, split], {r...};
//   Tcgen05Wait     tcgen05.wait::ld / ::st .sync.aligned;
//   Tcgen05Fence    tcgen05.fence::before_thread_sync / ::after_thread_sync;
//   Tcgen05Cp       tcgen05.cp.cta_group::N.<shape> [taddr], s-desc;   (one elected lane)
// Tensor-memory addresses are i32; shared-memory operands 32-bit shared-window addresses. Every
// form clobbers memory so that the compiler keeps ordinary accesses on their side.
#include "target/nvvm/op_lowering.h"

namespace opencute::target {
namespace {

using ir::Op;
using ir::OpCode;

std::string shared_address(KernelLowering& k, const Op& op, const ir::Value* ptr) {
  return k.shared_window_address(op, ptr, "a tcgen05 shared-memory operand must point into shared memory");
}

// The user's line as a PTX comment that the PTX executor reads (ptx_parser.cpp), so that its
// reports of a tcgen05 instruction name the kernel's source line as the emulator's do; ptxas
// ignores it. The file's bytes other than printable ASCII, and those an LLVM string or an asm
// template would read (" \ $) or the escape itself (%), are written %XX.
std::string user_line_comment(const Op& op) {
  if (!op.line || op.file.empty()) return "";
  std::string s = "// opencute-loc " + std::to_string(op.line) + " ";
  static const char* const hex = "0123456789ABCDEF";
  for (char ch : op.file) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '$' || c == '%') s += {'%', hex[c >> 4], hex[c & 15]};
    else s += ch;
  }
  return s + "\\0A\\09";
}

void asm_void(const Op& op, KernelLowering& k, const std::string& text, const std::string& constraints,
              const std::string& args) {
  k.emit_asm_clobbering_memory(user_line_comment(op) + text, constraints, args);
}

// `insn` issued by one elected lane of the active ones.
std::string elected(const std::string& insn) {
  return "{\\0A\\09.reg .pred ep;\\0A\\09.reg .b32 am;\\0A\\09activemask.b32 am;\\0A\\09elect.sync _|ep, am;\\0A\\09@ep " +
         insn + "\\0A\\09}";
}

std::string group(const Op& op) { return ".cta_group::" + std::to_string(op.int_attr); }

const char* shape_name(int64_t s) {
  static const char* const names[] = {"32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2"};
  return names[s];
}

void lower_alloc(const Op& op, KernelLowering& k) {
  std::string dst = shared_address(k, op, op.operands[0]);
  asm_void(op, k, "tcgen05.alloc" + group(op) + ".sync.aligned.shared::cta.b32 [$0], $1;", "r,r",
           "i32 " + dst + ", i32 " + k.operand(op.operands[1]));
}

void lower_dealloc(const Op& op, KernelLowering& k) {
  asm_void(op, k, "tcgen05.dealloc" + group(op) + ".sync.aligned.b32 $0, $1;", "r,r",
           "i32 " + k.operand(op.operands[0]) + ", i32 " + k.operand(op.operands[1]));
}

void lower_relinquish(const Op& op, KernelLowering& k) {
  asm_void(op, k, "tcgen05.relinquish_alloc_permit" + group(op) + ".sync.aligned;", "", "");
}

void lower_mma(const Op& op, KernelLowering& k) {
  static const char* const kinds[] = {"f16", "tf32", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4"};
  const bool a_tmem = op.ints.at(1) != 0;
  const bool scaled = ir::is_block_scaled(ir::Tcgen05Kind(op.ints.at(0)));
  std::string kind = std::string(".kind::") + kinds[op.ints.at(0)];
  if (scaled) kind += ".block_scale.scale_vec::" + std::to_string(op.ints.at(2)) + "X";
  std::string enable = k.emit_def("zext i1 " + k.operand(op.operands[4]) + " to i32");
  std::string text = std::string("{\\0A\\09.reg .pred p;\\0A\\09setp.ne.b32 p, $4, 0;\\0A\\09") +
                     elected(std::string("tcgen05.mma") + group(op) + kind + " [$0], " + (a_tmem ? "[$1]" : "$1") +
                             ", $2, $3, " + (scaled ? "[$5], [$6], " : "") + "p;") +
                     "\\0A\\09}";
  const std::string a = a_tmem ? "i32 " + k.operand(op.operands[1]) : "i64 " + k.narrow_descriptor(k.operand(op.operands[1]));
  std::string args = "i32 " + k.operand(op.operands[0]) + ", " + a + ", i64 " + k.narrow_descriptor(k.operand(op.operands[2])) +
                     ", i32 " + k.operand(op.operands[3]) + ", i32 " + enable;
  if (scaled) args += ", i32 " + k.operand(op.operands[5]) + ", i32 " + k.operand(op.operands[6]);
  asm_void(op, k, text, std::string("r,") + (a_tmem ? "r" : "l") + ",l,r,r" + (scaled ? ",r,r" : ""), args);
}

void lower_commit(const Op& op, KernelLowering& k) {
  std::string bar = shared_address(k, op, op.operands[0]);
  if (op.operands.size() == 2) {
    asm_void(op, k, elected("tcgen05.commit" + group(op) + ".mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [$0], $1;"),
             "r,h", "i32 " + bar + ", i16 " + k.operand(op.operands[1]));
    return;
  }
  asm_void(op, k, elected("tcgen05.commit" + group(op) + ".mbarrier::arrive::one.shared::cluster.b64 [$0];"), "r", "i32 " + bar);
}

std::string ldst_suffix(const Op& op, bool load) {
  std::string s = std::string(".sync.aligned.") + shape_name(op.int_attr) + ".x" + std::to_string(op.ints.at(0));
  if (op.ints.at(1)) s += load ? ".pack::16b" : ".unpack::16b";
  return s + ".b32";
}

std::string register_list(size_t first, size_t n) {
  std::string s = "{";
  for (size_t i = 0; i < n; ++i) s += (i ? ", $" : "$") + std::to_string(first + i);
  return s + "}";
}

void lower_ld(const Op& op, KernelLowering& k) {
  const size_t n = op.results.size();
  const bool split = op.int_attr == int64_t(ir::Tcgen05Shape::S16x32bx2);
  std::string text = "tcgen05.ld" + ldst_suffix(op, true) + " " + register_list(0, n) + ", [$" + std::to_string(n) + "]";
  if (split) text += ", " + std::to_string(op.ints.at(2));
  text += ";";
  std::string cons, ty;
  for (size_t i = 0; i < n; ++i) cons += "=r,", ty += (i ? ", i32" : "i32");
  cons += "r,~{memory}";
  std::string rt = n == 1 ? "i32" : "{" + ty + "}";
  std::string r = k.emit_def("call " + rt + " asm sideeffect \"" + text + "\", \"" + cons + "\"(i32 " +
                             k.operand(op.operands[0]) + ")");
  if (n == 1) return k.define(op, 0, r);
  for (size_t i = 0; i < n; ++i) k.define(op, int(i), k.emit_def("extractvalue " + rt + " " + r + ", " + std::to_string(i)));
}

void lower_st(const Op& op, KernelLowering& k) {
  const size_t n = op.operands.size() - 1;
  const bool split = op.int_attr == int64_t(ir::Tcgen05Shape::S16x32bx2);
  std::string text = "tcgen05.st" + ldst_suffix(op, false) + " [$0]";
  if (split) text += ", " + std::to_string(op.ints.at(2));
  text += ", " + register_list(1, n) + ";";
  std::string cons = "r", args = "i32 " + k.operand(op.operands[0]);
  for (size_t i = 0; i < n; ++i) cons += ",r", args += ", i32 " + k.operand(op.operands[i + 1]);
  asm_void(op, k, text, cons, args);
}

void lower_cp(const Op& op, KernelLowering& k) {
  static const char* const shapes[] = {"128x256b", "4x256b", "128x128b", "64x128b.warpx2::02_13",
                                       "64x128b.warpx2::01_23", "32x128b.warpx4"};
  // One thread's instruction (as tcgen05.mma): issued by one elected lane of the active ones.
  asm_void(op, k, elected("tcgen05.cp" + group(op) + "." + shapes[op.ints.at(0)] + " [$0], $1;"), "r,l",
           "i32 " + k.operand(op.operands[0]) + ", i64 " + k.narrow_descriptor(k.operand(op.operands[1])));
}

}  // namespace

void register_sm100_lowerings(LoweringTable& t) {
  t.add(OpCode::TmemAlloc, lower_alloc);
  t.add(OpCode::TmemDealloc, lower_dealloc);
  t.add(OpCode::TmemRelinquish, lower_relinquish);
  t.add(OpCode::Tcgen05Mma, lower_mma);
  t.add(OpCode::Tcgen05Commit, lower_commit);
  t.add(OpCode::Tcgen05Ld, lower_ld);
  t.add(OpCode::Tcgen05St, lower_st);
  t.add(OpCode::Tcgen05Cp, lower_cp);
  t.add(OpCode::Tcgen05Wait, [](const Op& op, KernelLowering& k) {
    asm_void(op, k, op.int_attr ? "tcgen05.wait::st.sync.aligned;" : "tcgen05.wait::ld.sync.aligned;", "", "");
  });
  t.add(OpCode::Tcgen05Fence, [](const Op& op, KernelLowering& k) {
    asm_void(op, k, op.int_attr ? "tcgen05.fence::after_thread_sync;" : "tcgen05.fence::before_thread_sync;", "", "");
  });
}

}  // namespace opencute::target
