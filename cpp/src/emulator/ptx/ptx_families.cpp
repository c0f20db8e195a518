// The instruction families of the PTX executor, registered once. A new family (tcgen05.* for
// Blackwell) adds its file with a register_ptx_<family>(PtxFamilyTable&) and one line here.
#include "emulator/ptx/ptx_program.h"

namespace opencute::emulator::ptx {

void register_ptx_arithmetic(PtxFamilyTable& t);  // ptx_arithmetic.cpp
void register_ptx_bits(PtxFamilyTable& t);        // ptx_bits.cpp
void register_ptx_compare(PtxFamilyTable& t);     // ptx_compare.cpp
void register_ptx_convert(PtxFamilyTable& t);     // ptx_convert.cpp
void register_ptx_memory(PtxFamilyTable& t);      // ptx_memory.cpp
void register_ptx_control(PtxFamilyTable& t);     // ptx_control.cpp
void register_ptx_warp(PtxFamilyTable& t);        // ptx_warp.cpp
void register_ptx_mma_sync(PtxFamilyTable& t);    // ptx_mma_sync.cpp
void register_ptx_ldmatrix(PtxFamilyTable& t);    // ptx_ldmatrix.cpp
void register_ptx_wgmma(PtxFamilyTable& t);       // ptx_wgmma.cpp
void register_ptx_mbarrier(PtxFamilyTable& t);    // ptx_mbarrier.cpp
void register_ptx_bulk_copy(PtxFamilyTable& t);   // ptx_bulk_copy.cpp
void register_ptx_tensormap(PtxFamilyTable& t);   // ptx_tensormap.cpp
void register_ptx_tcgen05_tmem(PtxFamilyTable& t); // ptx_tcgen05_tmem.cpp

const PtxFamilyTable& ptx_families() {
  static const PtxFamilyTable table = [] {
    PtxFamilyTable t;
    register_ptx_arithmetic(t);
    register_ptx_bits(t);
    register_ptx_compare(t);
    register_ptx_convert(t);
    register_ptx_memory(t);
    register_ptx_control(t);
    register_ptx_warp(t);
    register_ptx_mma_sync(t);
    register_ptx_ldmatrix(t);
    register_ptx_wgmma(t);
    register_ptx_mbarrier(t);
    register_ptx_bulk_copy(t);
    register_ptx_tensormap(t);
    register_ptx_tcgen05_tmem(t);
    return t;
  }();
  return table;
}

}  // namespace opencute::emulator::ptx
