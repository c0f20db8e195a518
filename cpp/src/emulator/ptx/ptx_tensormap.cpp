// TMA descriptors in device memory: tensormap.replace (a tensor map's global address, extent or
// byte stride, in global or shared memory) and tensormap.cp_fenceproxy (a shared-memory slot
// copied to a global one). A slot holds the 128-byte image of sm90_tensormap.h (the form the
// launch gives a descriptor parameter, copied by the kernel's ld / st), edited field by field.
#include "emulator/ptx/ptx_family_support.h"
#include "emulator/sm90_tensormap.h"

namespace opencute::emulator::ptx {

namespace {

enum Field : int32_t { GlobalAddress, GlobalDim, GlobalStride };

Step run_replace(const Inst& i, ThreadCtx& t) {
  uint8_t* p = t.host(t.address(i.ops[0]), i.space, sizeof(TmaDescriptorImage), true, 64);
  TmaDescriptorImage m;
  std::memcpy(&m, p, sizeof m);
  if (m.magic != kTmaImageMagic) t.fail("tensormap.replace on memory that holds no tensor map");
  const uint64_t v = t.get(i.ops.back());
  const int64_t ord = i.i0 == GlobalAddress ? 0 : int64_t(t.get(i.ops[1]));
  switch (i.i0) {
    case GlobalAddress:
      if (v % 16) t.fail("tensormap.replace: the global address is not 16-byte aligned");
      m.global_address = v;
      break;
    case GlobalDim:
      if (ord < 0 || ord >= m.rank) t.fail("tensormap.replace: dimension " + std::to_string(ord) + " of a rank-" + std::to_string(m.rank) + " map");
      m.dims[ord] = uint32_t(v);
      break;
    case GlobalStride:
      if (ord < 0 || ord + 1 >= m.rank) t.fail("tensormap.replace: stride " + std::to_string(ord) + " of a rank-" + std::to_string(m.rank) + " map");
      if (v % 16) t.fail("tensormap.replace: a byte stride that is not a multiple of 16");
      m.strides[ord + 1] = v;
      break;
  }
  std::memcpy(p, &m, sizeof m);
  return Step::Next;
}

Step run_cp_fenceproxy(const Inst& i, ThreadCtx& t) {
  const uint64_t bytes = t.get(i.ops[2]);
  if (bytes != 128) t.fail("tensormap.cp_fenceproxy copies 128 bytes");
  const uint8_t* src = t.host(t.address(i.ops[1]), Space::Shared, 128, false, 64);
  std::memmove(t.host(t.address(i.ops[0]), Space::Global, 128, true, 64), src, 128);
  return Step::Next;
}

void decode_tensormap(Inst& i) {
  if (i.has_mod("cp_fenceproxy")) {
    if (i.ops.size() != 3) unsupported(i, "operands");
    i.run = run_cp_fenceproxy;
    return;
  }
  if (!i.has_mod("replace") || !i.has_mod("tile")) unsupported(i);
  if (i.has_mod("global_address")) i.i0 = GlobalAddress;
  else if (i.has_mod("global_dim")) i.i0 = GlobalDim;
  else if (i.has_mod("global_stride")) i.i0 = GlobalStride;
  else unsupported(i, "only the global address, extents and strides");
  i.space = space_of(i);
  i.run = run_replace;
}

}  // namespace

void register_ptx_tensormap(PtxFamilyTable& t) { t.add("tensormap", decode_tensormap); }

}  // namespace opencute::emulator::ptx
