// ldmatrix / stmatrix .m8n8 .x1/.x2/.x4 (.trans) .b16: the PTX ISA's lane mapping, written from
// the ISA independently of the IR emulator's sm80_copy.cpp. Thread 8j + r gives the address of
// row r of matrix j; register j of lane l holds row l/4, columns 2(l%4) and 2(l%4)+1 of matrix
// j (with .trans, column l/4 of rows 2(l%4) and 2(l%4)+1).
// ldmatrix .m8n16 .b8x16.b4x16_p64 (sm_100a / sm_120a): a row is 16 unsigned 4-bit elements
// packed in its first 8 bytes (element 2k in the low nibble of byte k), then 64 bits of padding;
// register j of lane l holds elements 4(l%4) .. 4(l%4)+3 of row l/4, one to a byte, zero-extended.
#include "emulator/ptx/ptx_family_support.h"

namespace opencute::emulator::ptx {

namespace {

// The 16-bit element (row, col) of matrix j, through the row addresses threads gave.
uint16_t* element_at(CollectiveCtx& c, const Inst& i, int j, int row, int col, bool store) {
  Thread* giver = c.threads[size_t(8 * j + row)];
  if (!giver) c.fail(i.opcode + " needs all 32 threads of the warp");
  ThreadCtx t = c.ctx(8 * j + row);
  const Operand& addr = i.base == "ldmatrix" ? i.ops[1] : i.ops[0];
  const uint64_t a = t.address(addr);
  uint8_t* rowp = t.host(a, i.space, 16, store, 16);
  return reinterpret_cast<uint16_t*>(rowp) + col;
}

void run_ldmatrix(const Inst& i, CollectiveCtx& c) {
  const int nmat = i.i0;
  const bool trans = i.i1, unpack4 = i.i2;
  const Operand& d = i.ops[0];
  std::vector<uint32_t> out(size_t(32 * nmat));
  for (int l = 0; l < 32; ++l)
    for (int j = 0; j < nmat; ++j) {
      uint32_t w = 0;
      if (unpack4) {
        const auto* packed = reinterpret_cast<const uint8_t*>(element_at(c, i, j, l / 4, 0, false));
        for (int b = 0; b < 4; ++b) {
          const int e = 4 * (l % 4) + b;
          w |= uint32_t((packed[e / 2] >> (4 * (e % 2))) & 0xf) << (8 * b);
        }
        out[size_t(l * nmat + j)] = w;
        continue;
      }
      for (int h = 0; h < 2; ++h) {
        const int row = trans ? 2 * (l % 4) + h : l / 4, col = trans ? l / 4 : 2 * (l % 4) + h;
        w |= uint32_t(*element_at(c, i, j, row, col, false)) << (16 * h);
      }
      out[size_t(l * nmat + j)] = w;
    }
  for (int l = 0; l < 32; ++l)
    for (int j = 0; j < nmat; ++j) c.threads[size_t(l)]->regs[size_t(d.elems[size_t(j)].reg)] = out[size_t(l * nmat + j)];
}

void run_stmatrix(const Inst& i, CollectiveCtx& c) {
  const int nmat = i.i0;
  const bool trans = i.i1;
  const Operand& s = i.ops[1];
  for (int l = 0; l < 32; ++l) {
    if (!c.threads[size_t(l)]) c.fail(i.opcode + " needs all 32 threads of the warp");
    for (int j = 0; j < nmat; ++j) {
      const uint64_t w = reg_of(*c.threads[size_t(l)], s.elems[size_t(j)]);
      for (int h = 0; h < 2; ++h) {
        const int row = trans ? 2 * (l % 4) + h : l / 4, col = trans ? l / 4 : 2 * (l % 4) + h;
        *element_at(c, i, j, row, col, true) = uint16_t(w >> (16 * h));
      }
    }
  }
}

void decode_matrix(Inst& i) {
  if (!i.has_mod("sync") || !i.has_mod("aligned")) unsupported(i, "without .sync.aligned");
  const bool ld = i.base == "ldmatrix";
  i.i2 = ld && i.has_mod("m8n16") && i.has_mod("b8x16") && i.has_mod("b4x16_p64");
  if (!i.i2 && (!i.has_mod("m8n8") || !i.has_mod("b16")))
    unsupported(i, "only .m8n8 .b16 matrices and ldmatrix .m8n16 .b8x16.b4x16_p64");
  i.i0 = i.has_mod("x1") ? 1 : i.has_mod("x2") ? 2 : i.has_mod("x4") ? 4 : 0;
  if (!i.i0) unsupported(i, "no .x1/.x2/.x4");
  i.i1 = i.has_mod("trans");
  if (i.i2 && i.i1) unsupported(i, ".m8n16 with .trans");
  i.space = space_of(i);
  const Operand& regs = i.ops.at(ld ? 0 : 1);
  if (regs.kind != Operand::Vec || int(regs.elems.size()) != i.i0) unsupported(i, "register count");
  as_collective(i, ld ? run_ldmatrix : run_stmatrix, Scope::Warp);
}

}  // namespace

void register_ptx_ldmatrix(PtxFamilyTable& t) {
  t.add("ldmatrix", decode_matrix);
  t.add("stmatrix", decode_matrix);
}

}  // namespace opencute::emulator::ptx
