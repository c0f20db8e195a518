#include "target/nvvm/narrow_floats.h"

#include <cmath>
#include <sstream>

#include "support/fp6.h"
#include "target/nvvm/nvvm_types.h"

namespace opencute::target {

using ir::FloatKind;
using ir::Type;

namespace {

// e2m1 (an i4 holding the code) <-> f32 as internal helpers: support/fp4.h's algorithm, on
// every target. sm_100a's cvt.rn.satfinite.e2m1x2.f32 gives the same codes, but ptxas refuses
// it on plain sm_100 and __nvvm_reflect tells only __CUDA_ARCH, not the arch-specific
// feature set, so a module compiled for sm_100 could not use it safely.
std::string fp4_helper(ModuleState& ms, bool to_f32) {
  std::string name = to_f32 ? "__opencute_e2m1_to_f32" : "__opencute_e2m1_from_f32";
  if (ms.helpers.count(name)) return name;
  std::ostringstream s;
  if (to_f32) {
    s << "define internal float @" << name << "(i4 %b) alwaysinline {\n"
      << "  %u = zext i4 %b to i32\n"
      << "  %es = lshr i32 %u, 1\n"
      << "  %e = and i32 %es, 3\n"
      << "  %m = and i32 %u, 1\n"
      << "  %zero_e = icmp eq i32 %e, 0\n"
      << "  %half = mul i32 %m, 1056964608\n"  // 0.5 or 0
      << "  %eb = add i32 %e, 126\n"
      << "  %ebs = shl i32 %eb, 23\n"
      << "  %ms = shl i32 %m, 22\n"
      << "  %normal = or i32 %ebs, %ms\n"
      << "  %mag = select i1 %zero_e, i32 %half, i32 %normal\n"
      << "  %sb = and i32 %u, 8\n"
      << "  %sign = shl i32 %sb, 28\n"
      << "  %bits = or i32 %mag, %sign\n"
      << "  %f = bitcast i32 %bits to float\n"
      << "  ret float %f\n}\n";
  } else {
    s << "define internal i4 @" << name << "(float %f) alwaysinline {\n"
      << "  %x = bitcast float %f to i32\n"
      << "  %sh = lshr i32 %x, 28\n"
      << "  %sign = and i32 %sh, 8\n"
      << "  %magb = and i32 %x, 2147483647\n"
      << "  %m = bitcast i32 %magb to float\n";
    // Unordered comparisons: NaN is above every midpoint and saturates like infinity.
    const std::pair<const char*, double> midpoints[] = {{"ugt", 0.25}, {"uge", 0.75}, {"ugt", 1.25}, {"uge", 1.75},
                                                        {"ugt", 2.5},  {"uge", 3.5},  {"ugt", 5.0}};
    std::string sum = "0";
    for (int k = 0; k < 7; ++k) {
      s << "  %c" << k << " = fcmp " << midpoints[k].first << " float %m, " << hex_double(midpoints[k].second) << "\n"
        << "  %z" << k << " = zext i1 %c" << k << " to i32\n"
        << "  %s" << k << " = add i32 " << sum << ", %z" << k << "\n";
      sum = "%s" + std::to_string(k);
    }
    s << "  %code = or i32 " << sum << ", %sign\n"
      << "  %r = trunc i32 %code to i4\n"
      << "  ret i4 %r\n}\n";
  }
  ms.helpers.emplace(name, s.str());
  return name;
}

// fp8 <-> f32 as internal helper functions: the integer algorithm of support/fp8.h.
std::string fp8_helper(ModuleState& ms, Type t, bool to_f32) {
  const support::Fp8Format& f = fp8_format(t);
  const bool e4m3 = t->float_kind == FloatKind::E4M3;
  std::string name = std::string("__opencute_") + (e4m3 ? "e4m3" : "e5m2") + (to_f32 ? "_to_f32" : "_from_f32");
  if (ms.helpers.count(name)) return name;
  const int m = f.mantissa_bits;
  std::ostringstream s;
  if (to_f32) {
    const int emax = 0x7f >> m;
    const std::string arch = ms.format_global("__CUDA_ARCH");
    ms.declare("i32", "__nvvm_reflect", "i8*");
    s << "define internal float @" << name << "(i8 %b) alwaysinline {\n"
      << "  %archp = addrspacecast i8 addrspace(1)* getelementptr inbounds ([12 x i8], [12 x i8] addrspace(1)* "
      << arch << ", i64 0, i64 0) to i8*\n"
      << "  %arch = call i32 @__nvvm_reflect(i8* %archp)\n"
      << "  %hw = icmp sge i32 %arch, 890\n"
      << "  br i1 %hw, label %cvt, label %soft\n"
      << "cvt:\n"  // exact: every fp8 value is an f16 value
      << "  %w = zext i8 %b to i16\n"
      << "  %pair = call i32 asm \"cvt.rn.f16x2." << (e4m3 ? "e4m3x2" : "e5m2x2") << " $0, $1;\", \"=r,h\"(i16 %w)\n"
      << "  %lo = trunc i32 %pair to i16\n"
      << "  %h = bitcast i16 %lo to half\n"
      << "  %hf = fpext half %h to float\n"
      << "  ret float %hf\n"
      << "soft:\n"
      << "  %u = zext i8 %b to i32\n"
      << "  %es = lshr i32 %u, " << m << "\n"
      << "  %e = and i32 %es, " << emax << "\n"
      << "  %mant = and i32 %u, " << ((1 << m) - 1) << "\n"
      << "  %normal = icmp ne i32 %e, 0\n"
      << "  %hidden = select i1 %normal, i32 " << (1 << m) << ", i32 0\n"
      << "  %mi = or i32 %mant, %hidden\n"
      << "  %ee = select i1 %normal, i32 %e, i32 1\n"
      << "  %k = add i32 %ee, " << (127 - f.exponent_bias - m) << "\n"
      << "  %kb = shl i32 %k, 23\n"
      << "  %scale = bitcast i32 %kb to float\n"
      << "  %mf = uitofp i32 %mi to float\n"
      << "  %v = fmul float %mf, %scale\n"
      << "  %nv = fsub float " << hex_double(-0.0) << ", %v\n"
      << "  %sb = and i32 %u, 128\n"
      << "  %neg = icmp ne i32 %sb, 0\n"
      << "  %sv = select i1 %neg, float %nv, float %v\n";
    if (f.has_inf) {
      s << "  %top = icmp eq i32 %e, " << emax << "\n"
        << "  %mz = icmp eq i32 %mant, 0\n"
        << "  %inf = select i1 %neg, float " << hex_double(-INFINITY) << ", float " << hex_double(INFINITY) << "\n"
        << "  %special = select i1 %mz, float %inf, float " << hex_double(NAN) << "\n"
        << "  %r = select i1 %top, float %special, float %sv\n";
    } else {
      s << "  %low = and i32 %u, 127\n"
        << "  %nan = icmp eq i32 %low, 127\n"
        << "  %r = select i1 %nan, float " << hex_double(NAN) << ", float %sv\n";
    }
    s << "  ret float %r\n}\n";
  } else {
    const int shift = 23 - m;
    // sm_89+ converts with one cvt.rn.satfinite (same result); __nvvm_reflect folds the
    // choice when libNVVM compiles for a given architecture.
    const std::string arch = ms.format_global("__CUDA_ARCH");
    ms.declare("i32", "__nvvm_reflect", "i8*");
    s << "define internal i8 @" << name << "(float %f) alwaysinline {\n"
      << "  %archp = addrspacecast i8 addrspace(1)* getelementptr inbounds ([12 x i8], [12 x i8] addrspace(1)* "
      << arch << ", i64 0, i64 0) to i8*\n"
      << "  %arch = call i32 @__nvvm_reflect(i8* %archp)\n"
      << "  %hw = icmp sge i32 %arch, 890\n"
      << "  br i1 %hw, label %cvt, label %soft\n"
      << "cvt:\n"
      << "  %pair = call i16 asm \"cvt.rn.satfinite." << (e4m3 ? "e4m3x2" : "e5m2x2")
      << ".f32 $0, $1, $2;\", \"=h,f,f\"(float " << hex_double(0.0) << ", float %f)\n"
      << "  %low = trunc i16 %pair to i8\n"
      << "  ret i8 %low\n"
      << "soft:\n"
      << "  %x = bitcast float %f to i32\n"
      << "  %sh = lshr i32 %x, 24\n"
      << "  %sign = and i32 %sh, 128\n"
      << "  %mag = and i32 %x, 2147483647\n"
      << "  %lsbs = lshr i32 %mag, " << shift << "\n"
      << "  %lsb = and i32 %lsbs, 1\n"
      << "  %bias = add i32 %lsb, " << ((1 << (shift - 1)) - 1) << "\n"
      << "  %sum = add i32 %mag, %bias\n"
      << "  %rounded = lshr i32 %sum, " << shift << "\n"
      << "  %ncode = sub i32 %rounded, " << ((127 - f.exponent_bias) << m) << "\n"
      << "  %over = icmp ugt i32 %ncode, " << int(f.max_code) << "\n"
      << "  %normal_code = select i1 %over, i32 " << int(f.max_code) << ", i32 %ncode\n"
      << "  %magf = bitcast i32 %mag to float\n"
      << "  %scaled = fmul float %magf, " << hex_double(f.subnormal_scale) << "\n"
      << "  %up = fadd float %scaled, " << hex_double(8388608.0) << "\n"
      << "  %rq = fsub float %up, " << hex_double(8388608.0) << "\n"
      << "  %sub_code = fptoui float %rq to i32\n"
      << "  %is_normal = icmp uge i32 %mag, " << f.min_normal << "\n"
      << "  %code = select i1 %is_normal, i32 %normal_code, i32 %sub_code\n"
      << "  %big = icmp uge i32 %mag, " << f.max_finite << "\n"
      << "  %sat = select i1 %big, i32 " << int(f.max_code) << ", i32 %code\n"
      << "  %signed = or i32 %sat, %sign\n"
      << "  %nan = icmp ugt i32 %mag, 2139095040\n"
      << "  %r = select i1 %nan, i32 127, i32 %signed\n"
      << "  %b = trunc i32 %r to i8\n"
      << "  ret i8 %b\n}\n";
  }
  ms.helpers.emplace(name, s.str());
  return name;
}

// e2m3 / e3m2 (an i6 holding the code) <-> f32 as internal helpers, support/fp6.h's model: the
// decode from the fields, the encode counting the midpoints of neighbouring magnitudes that the
// magnitude lies above (at a midpoint, above only where that rounds to the even code), as e2m1's.
std::string fp6_helper(ModuleState& ms, Type t, bool to_f32) {
  const bool e2m3 = t->is_float_kind(ir::FloatKind::E2M3);
  const support::Fp6Format& f = e2m3 ? support::e2m3_format() : support::e3m2_format();
  const std::string name = std::string("__opencute_") + (e2m3 ? "e2m3" : "e3m2") + (to_f32 ? "_to_f32" : "_from_f32");
  if (ms.helpers.count(name)) return name;
  std::ostringstream s;
  const int mbits = f.mantissa_bits;
  if (to_f32) {
    s << "define internal float @" << name << "(i6 %b) alwaysinline {\n"
      << "  %u = zext i6 %b to i32\n"
      << "  %m = and i32 %u, " << ((1 << mbits) - 1) << "\n"
      << "  %es = lshr i32 %u, " << mbits << "\n"
      << "  %e = and i32 %es, " << ((1 << f.exponent_bits) - 1) << "\n"
      << "  %zero_e = icmp eq i32 %e, 0\n"
      << "  %mf = uitofp i32 %m to float\n"
      << "  %subf = fmul float %mf, " << hex_double(std::ldexp(1.0, 1 - f.bias - mbits)) << "\n"
      << "  %sub = bitcast float %subf to i32\n"
      << "  %eb = add i32 %e, " << (127 - f.bias) << "\n"
      << "  %ebs = shl i32 %eb, 23\n"
      << "  %ms = shl i32 %m, " << (23 - mbits) << "\n"
      << "  %normal = or i32 %ebs, %ms\n"
      << "  %mag = select i1 %zero_e, i32 %sub, i32 %normal\n"
      << "  %sb = and i32 %u, 32\n"
      << "  %sign = shl i32 %sb, 26\n"
      << "  %bits = or i32 %mag, %sign\n"
      << "  %f = bitcast i32 %bits to float\n"
      << "  ret float %f\n}\n";
  } else {
    s << "define internal i6 @" << name << "(float %f) alwaysinline {\n"
      << "  %x = bitcast float %f to i32\n"
      << "  %sh = lshr i32 %x, 26\n"
      << "  %sign = and i32 %sh, 32\n"
      << "  %magb = and i32 %x, 2147483647\n"
      << "  %m = bitcast i32 %magb to float\n";
    // Unordered comparisons: NaN is above every midpoint and saturates like infinity.
    std::string sum = "0";
    for (int c = 0; c < 31; ++c) {
      const double mid = (double(support::fp6_bits_to_float(uint8_t(c), f)) +
                          double(support::fp6_bits_to_float(uint8_t(c + 1), f))) / 2;
      s << "  %c" << c << " = fcmp " << (c % 2 ? "uge" : "ugt") << " float %m, " << hex_double(mid) << "\n"
        << "  %z" << c << " = zext i1 %c" << c << " to i32\n"
        << "  %s" << c << " = add i32 " << sum << ", %z" << c << "\n";
      sum = "%s" + std::to_string(c);
    }
    s << "  %code = or i32 " << sum << ", %sign\n"
      << "  %r = trunc i32 %code to i6\n"
      << "  ret i6 %r\n}\n";
  }
  ms.helpers.emplace(name, s.str());
  return name;
}

}  // namespace

Type compute_type(Type t) {
  return (t->is_f16() || t->is_bf16() || t->is_fp8() || t->is_fp4() || t->is_fp6() || t->is_e8m0()) ? ir::f32() : t;
}

namespace {

// e8m0 (an i8) <-> f32 inline, support/e8m0.h's rules: 2^(b - 127) with 0x00 the f32 subnormal
// 2^-127 and 0xFF NaN; back by the exponent field (round toward zero), non-positive values 0x00,
// +inf 0xFE, NaN 0xFF.
std::string e8m0_to_f32(KernelLowering& k, const std::string& v) {
  std::string s = k.emit_def("shl i32 " + k.emit_def("zext i8 " + v + " to i32") + ", 23");
  s = k.emit_def("select i1 " + k.emit_def("icmp eq i8 " + v + ", 0") + ", i32 4194304, i32 " + s);
  s = k.emit_def("select i1 " + k.emit_def("icmp eq i8 " + v + ", -1") + ", i32 2143289344, i32 " + s);
  return k.emit_def("bitcast i32 " + s + " to float");
}

std::string f32_to_e8m0(KernelLowering& k, const std::string& v) {
  std::string x = k.emit_def("bitcast float " + v + " to i32");
  std::string e = k.emit_def("trunc i32 " + k.emit_def("lshr i32 " + x + ", 23") + " to i8");
  std::string r = k.emit_def("select i1 " + k.emit_def("fcmp ogt float " + v + ", 0.0") + ", i8 " + e + ", i8 0");
  r = k.emit_def("select i1 " + k.emit_def("icmp eq i8 " + r + ", -1") + ", i8 -2, i8 " + r);
  return k.emit_def("select i1 " + k.emit_def("fcmp uno float " + v + ", " + v) + ", i8 -1, i8 " + r);
}

}  // namespace

// To the type arithmetic happens in (f32 for the 16-bit floats; both convert exactly).
std::string widen(KernelLowering& k, Type t, const std::string& v) {
  if (t->is_f16()) return k.emit_def("fpext half " + v + " to float");
  if (t->is_fp8()) return k.emit_def("call float @" + fp8_helper(k.module(), t, true) + "(i8 " + v + ")");
  if (t->is_fp4()) return k.emit_def("call float @" + fp4_helper(k.module(), true) + "(i4 " + v + ")");
  if (t->is_e8m0()) return e8m0_to_f32(k, v);
  if (t->is_fp6()) return k.emit_def("call float @" + fp6_helper(k.module(), t, true) + "(i6 " + v + ")");
  if (t->is_bf16()) {
    std::string z = k.emit_def("zext i16 " + v + " to i32");
    std::string s = k.emit_def("shl i32 " + z + ", 16");
    return k.emit_def("bitcast i32 " + s + " to float");
  }
  return v;
}

// From f32 back to a 16-bit float with round-to-nearest-even.
std::string narrow(KernelLowering& k, Type t, const std::string& v) {
  if (t->is_f16()) return k.emit_def("fptrunc float " + v + " to half");
  if (t->is_fp8()) return k.emit_def("call i8 @" + fp8_helper(k.module(), t, false) + "(float " + v + ")");
  if (t->is_fp4()) return k.emit_def("call i4 @" + fp4_helper(k.module(), false) + "(float " + v + ")");
  if (t->is_e8m0()) return f32_to_e8m0(k, v);
  if (t->is_fp6()) return k.emit_def("call i6 @" + fp6_helper(k.module(), t, false) + "(float " + v + ")");
  if (t->is_bf16()) {
    // The hardware conversion (sm_80 and later, every target OpenCuTe compiles for): one
    // instruction where the bit-level rounding took ten, in every bf16 epilogue. It rounds to
    // nearest even as support::float_to_bf16_bits does; a NaN stays a NaN (its payload may differ).
    return k.emit_def("call i16 asm \"cvt.rn.bf16.f32 $0, $1;\", \"=h,f\"(float " + v + ")");
  }
  return v;
}

}  // namespace opencute::target
