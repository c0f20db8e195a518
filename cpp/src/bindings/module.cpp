// The nanobind module cutlass._core: the Python front end's only door into the C++ layers.
// Functions here unpack Python objects, call C++, and wrap the result; no semantics live here.
#include <optional>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/unique_ptr.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstdio>

#include "dsl/arch_ops.h"
#include "dsl/named_barrier.h"
#include "bindings/async_bindings.h"
#include "bindings/tensormap_bindings.h"
#include "dsl/launch_control.h"
#include "dsl/dtype.h"
#include "dsl/fast_divmod.h"
#include "dsl/num.h"
#include "dsl/printf_format.h"
#include "dsl/tracer.h"
#include "ir/printer.h"
#include "runtime/cuda_driver.h"
#include "support/arch.h"
#include "runtime/executor.h"
#include "support/crash_report.h"
#include "support/cuda_paths.h"
#include "support/env.h"
#include "support/log.h"
#include "runtime/compile_cache.h"
#include "bindings/compiled_function.h"
#include "bindings/tvm_ffi_function.h"
#include "bindings/xla_ffi_call.h"
#include "bindings/export_bindings.h"
#include "bindings/traced_program_bindings.h"
#include "bindings/direct_call.h"
#include "bindings/launch_floor_bindings.h"
#include "bindings/layout_bindings.h"
#include "bindings/type_handle.h"
#include "bindings/num_convert.h"
#include "bindings/python_errors.h"
#include "bindings/runtime_bindings.h"
#include "bindings/sm90_bindings.h"
#include "bindings/cluster_launch_control_bindings.h"
#include "bindings/sm100_bindings.h"
#include "bindings/smem_bindings.h"
#include "runtime/tensor_spec.h"
#include "bindings/tensor_argument.h"
#include "bindings/mma_bindings.h"
#include "bindings/tensor_bindings.h"
#include "bindings/carry_bindings.h"
#include "bindings/tensor_ssa_bindings.h"
#include "support/cuda_paths.h"
#include "target/nvvm/lower_to_nvvm.h"
#include "target/nvvm/nvvm_compiler.h"

namespace nb = nanobind;
using namespace opencute;
using dsl::Num;
using bindings::to_num;

using bindings::TypeHandle;

namespace {

struct OpHandle {  // a region op under construction
  ir::Op* op;
};


std::vector<ir::Value*> materialize_all(nb::handle seq) {
  std::vector<ir::Value*> out;
  for (nb::handle h : seq) out.push_back(dsl::materialize(to_num(h)));
  return out;
}

std::vector<Num> results_of(ir::Op* op) {
  std::vector<Num> out;
  for (auto& r : op->results) out.push_back(Num::of_value(r.get()));
  return out;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "OpenCuTe C++ core";
  opencute::support::install_crash_report_if_requested();
  // Libraries keep compiled kernels, atoms and layouts in module-level caches that the
  // interpreter may not clear before this module goes away at exit; nanobind would print each as
  // a "leak" at every user's exit. OPENCUTE_NANOBIND_LEAK_WARNINGS=1 turns them back on to hunt
  // real reference-count bugs.
  {
    const char* leaks = std::getenv("OPENCUTE_NANOBIND_LEAK_WARNINGS");
    nb::set_leak_warnings(leaks != nullptr && leaks[0] == '1');
  }

  m.def("_set_user_error_class", [](nb::object cls) { bindings::user_error_class() = cls; });
  m.def("_set_runtime_error_class", [](nb::object cls) { bindings::runtime_error_class() = cls; });
  m.def("_set_cuda_error_class", [](nb::object cls) { bindings::cuda_error_class() = cls; });
  nb::register_exception_translator([](const std::exception_ptr& p, void*) { bindings::translate_dsl_exception(p); });

  // ---- enums the Python front end passes to C++: exported, not copied ----
  nb::enum_<dsl::BinOp>(m, "BinOp", nb::is_arithmetic())
      .value("Add", dsl::BinOp::Add).value("Sub", dsl::BinOp::Sub).value("Mul", dsl::BinOp::Mul)
      .value("TrueDiv", dsl::BinOp::TrueDiv).value("FloorDiv", dsl::BinOp::FloorDiv).value("Mod", dsl::BinOp::Mod)
      .value("Pow", dsl::BinOp::Pow).value("And", dsl::BinOp::And).value("Or", dsl::BinOp::Or)
      .value("Xor", dsl::BinOp::Xor).value("Shl", dsl::BinOp::Shl).value("Shr", dsl::BinOp::Shr)
      .value("Min", dsl::BinOp::Min).value("Max", dsl::BinOp::Max);
  nb::enum_<ir::CmpPredicate>(m, "CmpPredicate", nb::is_arithmetic())
      .value("Eq", ir::CmpPredicate::Eq).value("Ne", ir::CmpPredicate::Ne).value("Lt", ir::CmpPredicate::Lt)
      .value("Le", ir::CmpPredicate::Le).value("Gt", ir::CmpPredicate::Gt).value("Ge", ir::CmpPredicate::Ge);
  // The flags of a Launch op (ir.h LaunchFlags), for the launch call that builds it.
  nb::enum_<ir::LaunchFlags>(m, "LaunchFlags", nb::is_arithmetic())
      .value("Cluster", ir::kLaunchCluster).value("Cooperative", ir::kLaunchCooperative)
      .value("Pdl", ir::kLaunchPdl).value("CompletionEvent", ir::kLaunchCompletionEvent)
      .value("ProgrammaticEvent", ir::kLaunchProgrammaticEvent);
  // Boolean environment switches, read by one rule (support/env.h).
  m.def("env_flag", [](const std::string& name) { return support::env_flag(name.c_str()); });

  // ---- numerics ----
  nb::class_<TypeHandle>(m, "IRType")
      .def("__str__", [](const TypeHandle& t) { return ir::to_string(t.t); })
      .def("__eq__", [](const TypeHandle& a, const TypeHandle& b) { return a.t == b.t; })
      .def("__hash__", [](const TypeHandle& t) { return std::hash<const void*>()(t.t); });
  m.def("dtype_type", [](const std::string& name) { return TypeHandle{dsl::dtype_from_name(name)}; });
  m.def("pointer_type", [](const std::string& dtype, int space, int align) {
    return TypeHandle{ir::pointer_type(dsl::dtype_from_name(dtype), ir::AddrSpace(space), align)};
  });
  m.def("dtype_names", &dsl::dtype_names);
  m.def("promote", [](const std::string& a, const std::string& b) {
    return dsl::dtype_name(dsl::promote(dsl::dtype_from_name(a), dsl::dtype_from_name(b)));
  });
  m.def("dtype_info", [](const std::string& name) {
    ir::Type t = dsl::dtype_from_name(name);
    // `bytes` is the CuTe DSL's max(1, ceil(width / 8)): a 4-bit type reports 1.
    return nb::make_tuple(t->width, t->is_float(), t->is_signed, (t->bit_size() + 7) / 8);
  });

  nb::class_<Num>(m, "Num")
      .def_prop_ro("dtype", [](const Num& n) { return dsl::dtype_name(n.type); })
      .def_prop_ro("is_static", [](const Num& n) { return n.is_static; })
      .def_prop_ro("value", &bindings::python_value)
      .def_prop_ro("ir_type", [](const Num& n) { return TypeHandle{n.type}; })
      .def("__repr__", &dsl::num_repr);

  m.def("num", [](const std::string& dtype, nb::handle v) {
    ir::Type t = dsl::dtype_from_name(dtype);
    if (PyFloat_Check(v.ptr())) {
      double d = PyFloat_AsDouble(v.ptr());
      if (t->is_int() && !t->is_bool()) {
        if (std::isnan(d)) throw nb::value_error("cannot convert float NaN to integer");
        if (std::isinf(d)) throw std::overflow_error("cannot convert float infinity to integer");
      }
      if (t->is_bool()) return Num::of_int(t, d != 0.0);
      return Num::of_float(t, d);
    }
    if (PyLong_Check(v.ptr()) || PyBool_Check(v.ptr())) {
      if (t->is_bool()) return Num::of_int(t, PyObject_IsTrue(v.ptr()) == 1);
      int overflow = 0;
      long long i = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
      if (overflow) {
        // C-style wrap of big Python ints: keep the low 64 bits.
        i = (long long)PyLong_AsUnsignedLongLongMask(v.ptr());
      }
      return Num::of_int(t, i);
    }
    return dsl::convert(to_num(v), t);
  });
  m.def("as_num", &to_num);
  m.def("binary", [](int op, nb::handle a, nb::handle b) {
    return dsl::binary(dsl::BinOp(op), bindings::to_operand(a), bindings::to_operand(b));
  });
  m.def("compare", [](int p, nb::handle a, nb::handle b) {
    return dsl::compare(ir::CmpPredicate(p), bindings::to_operand(a), bindings::to_operand(b));
  });
  m.def("negate", [](nb::handle a) { return dsl::negate(to_num(a)); });
  m.def("invert", [](nb::handle a) { return dsl::invert(to_num(a)); });
  m.def("absolute", [](nb::handle a) { return dsl::absolute(to_num(a)); });
  m.def("to_boolean", [](nb::handle a) { return dsl::to_boolean(to_num(a)); });
  m.def("convert", [](nb::handle a, const std::string& dtype) { return dsl::convert(to_num(a), dsl::dtype_from_name(dtype)); });
  m.def("bitcast", [](nb::handle a, const std::string& dtype) { return dsl::bitcast(to_num(a), dsl::dtype_from_name(dtype)); });
  m.def("select", [](nb::handle c, nb::handle a, nb::handle b) { return dsl::select(to_num(c), to_num(a), to_num(b)); });
  m.def("fma", [](nb::handle a, nb::handle b, nb::handle c) {
    return dsl::fma(bindings::to_operand(a), bindings::to_operand(b), bindings::to_operand(c));
  });
  m.def("math", [](const std::string& fn, nb::list args) {
    std::vector<Num> operands;
    for (nb::handle h : args) operands.push_back(bindings::to_operand(h));
    return dsl::math(fn, operands);
  });
  // cute.FastDivmodDivisor (dsl/fast_divmod.h)
  m.def("fast_divisor_prepare", [](nb::handle d) { return dsl::fast_divisor_prepare(to_num(d)); });
  m.def("fast_divisor_value", [](nb::handle prepared) { return dsl::fast_divisor_value(to_num(prepared)); });
  m.def("fast_floordiv", [](nb::handle x, nb::handle prepared) {
    return dsl::fast_floordiv(to_num(x), to_num(prepared));
  });


  // ---- tracing ----
  nb::class_<OpHandle>(m, "Op");
  nb::class_<dsl::Tracer>(m, "Tracer")
      .def(nb::init<>())
      .def("activate", &dsl::Tracer::activate)
      .def("deactivate", &dsl::Tracer::deactivate)
      .def("in_kernel", &dsl::Tracer::in_kernel)
      .def("begin_function", [](dsl::Tracer& t, const std::string& name, bool kernel) {
        t.begin_function(name, kernel ? ir::FunctionKind::Kernel : ir::FunctionKind::Host);
      })
      .def("set_reqntid", [](dsl::Tracer& t, int x, int y, int z) {
        auto* f = t.current_function();
        f->reqntid[0] = x; f->reqntid[1] = y; f->reqntid[2] = z;
      })
      .def("add_argument", [](dsl::Tracer& t, const TypeHandle& ty) { return Num::of_value(t.add_argument(ty.t)); })
      .def("end_function", [](dsl::Tracer& t, nb::list results) { t.end_function(materialize_all(results)); })
      .def("unique_kernel_name", &dsl::Tracer::unique_kernel_name)
      .def("module_text", [](dsl::Tracer& t) { return ir::print_module(t.module()); })
      .def("set_location", [](dsl::Tracer& t, const std::string& file, int line) { t.builder().set_location(file, line); })
      .def("if_begin", [](dsl::Tracer& t, nb::handle cond) {
        Num c = dsl::to_boolean(to_num(cond));
        return OpHandle{t.builder().create_if(dsl::materialize(c))};
      })
      .def("for_begin", [](dsl::Tracer& t, nb::handle lb, nb::handle ub, nb::handle step, nb::list inits, int unroll) {
        Num l = to_num(lb), u = to_num(ub), s = to_num(step);
        ir::Type it = dsl::promote(dsl::promote(l.type, u.type), s.type);
        if (!it->is_int() || it->is_bool()) throw dsl::UserError("TYPE_LOOP_PARAM_NOT_INT", "range bounds must be integers");
        ir::Op* op = t.builder().create_for(dsl::materialize(dsl::convert(l, it)), dsl::materialize(dsl::convert(u, it)),
                                            dsl::materialize(dsl::convert(s, it)), materialize_all(inits), unroll);
        std::vector<Num> iters;
        ir::Block* body = op->region_block(0);
        for (size_t i = 1; i < body->args.size(); ++i) iters.push_back(Num::of_value(body->args[i].get()));
        return nb::make_tuple(OpHandle{op}, Num::of_value(body->args[0].get()), iters);
      })
      .def("while_begin", [](dsl::Tracer& t, nb::list inits) {
        ir::Op* op = t.builder().create_while(materialize_all(inits));
        std::vector<Num> before, after;
        for (auto& a : op->region_block(0)->args) before.push_back(Num::of_value(a.get()));
        for (auto& a : op->region_block(1)->args) after.push_back(Num::of_value(a.get()));
        return nb::make_tuple(OpHandle{op}, before, after);
      })
      .def("enter_region", [](dsl::Tracer& t, OpHandle h, int i) { t.enter_region(h.op, i); })
      .def("exit_to_parent", [](dsl::Tracer& t, OpHandle h) { t.exit_to_parent(h.op); })
      // Drops a region op just traced (a loop traced again from a weaker carried structure).
      .def("erase_op", [](dsl::Tracer& t, OpHandle h) {
        auto& ops = h.op->parent->ops;
        for (auto it = ops.begin(); it != ops.end(); ++it)
          if (it->get() == h.op) { ops.erase(it); break; }
      })
      .def("yield_", [](dsl::Tracer& t, nb::list vals) { t.builder().yield(materialize_all(vals)); })
      .def("condition", [](dsl::Tracer& t, nb::handle cond, nb::list vals) {
        t.builder().condition(dsl::materialize(dsl::to_boolean(to_num(cond))), materialize_all(vals));
      })
      .def("set_results", [](dsl::Tracer& t, OpHandle h, std::vector<TypeHandle> types) {
        ir::Op* op = h.op;
        std::vector<ir::Type> ts;
        for (auto& th : types) ts.push_back(th.t);
        t.builder().set_results(op, ts);
        return results_of(op);
      })
      .def("printf", [](dsl::Tracer& t, const std::string& fmt, nb::list args) {
        std::vector<ir::Value*> vals = materialize_all(args);
        std::vector<ir::Type> types;
        for (auto* v : vals) types.push_back(v->type);
        t.builder().printf(dsl::to_c_format(fmt, types), vals);
      })
      .def("special", [](dsl::Tracer& t, const std::string& what, int dim) {
        if (!t.in_kernel()) throw dsl::UserError("ARCH_OUTSIDE_KERNEL", what + " is only available inside a @cute.kernel");
        ir::OpCode c = what == "thread_idx" ? ir::OpCode::ThreadIdx : what == "block_idx" ? ir::OpCode::BlockIdx
                     : what == "block_dim"  ? ir::OpCode::BlockDim  : what == "grid_dim"  ? ir::OpCode::GridDim
                     : what == "lane_idx"   ? ir::OpCode::LaneIdx   : ir::OpCode::WarpIdx;
        return Num::of_value(t.builder().special(c, dim));
      })
      .def("barrier", [](dsl::Tracer& t) {
        if (!t.in_kernel()) throw dsl::UserError("ARCH_OUTSIDE_KERNEL", "sync_threads is only available inside a @cute.kernel");
        t.builder().barrier();
      })
      .def("set_assertions_enabled", &dsl::Tracer::set_assertions_enabled)
      .def("set_target_arch", &dsl::Tracer::set_target_arch)
      .def_prop_ro("target_arch", [](const dsl::Tracer& t) { return t.target_arch().name; })
      .def("assertions_enabled", &dsl::Tracer::assertions_enabled)
      .def("assertion", [](dsl::Tracer&, nb::handle cond, const std::string& message, const std::string& file, int line) {
        dsl::assertion(to_num(cond), message, file, line);
      })
      .def("shuffle", [](dsl::Tracer&, const std::string& kind, nb::handle value, nb::handle offset, nb::handle mask,
                         nb::handle clamp) {
        return dsl::shuffle(ir::shuffle_kind_from_name(kind), to_num(value), to_num(offset), to_num(mask), to_num(clamp));
      })
      .def("named_barrier", [](dsl::Tracer&, nb::handle id, nb::handle count, bool arrive_only) {
        dsl::named_barrier(to_num(id), to_num(count),
                           arrive_only ? ir::NamedBarrierKind::Arrive : ir::NamedBarrierKind::Sync);
      })
      .def("inline_asm", [](dsl::Tracer&, nb::handle result, nb::list operands, const std::string& asm_text,
                            const std::string& constraints, bool side_effects, const std::string& file,
                            int line) -> nb::object {
        ir::Type rt = result.is_none() ? nullptr : nb::cast<const TypeHandle&>(result).t;
        std::vector<Num> ops;
        for (nb::handle h : operands) ops.push_back(to_num(h));
        Num r = dsl::inline_asm(rt, ops, asm_text, constraints, side_effects, file, line);
        if (!rt) return nb::none();
        return nb::cast(r);
      }, nb::arg("result").none(), nb::arg("operands"), nb::arg("asm_text"), nb::arg("constraints"),
         nb::arg("side_effects"), nb::arg("file"), nb::arg("line"))
      .def("griddepcontrol", [](dsl::Tracer&, bool wait) {
        dsl::griddepcontrol(wait ? ir::GridDepControlKind::Wait : ir::GridDepControlKind::LaunchDependents);
      })
      .def("vote", [](dsl::Tracer&, const std::string& kind, nb::handle pred, nb::handle mask) {
        return dsl::vote(ir::vote_kind_from_name(kind), to_num(pred), to_num(mask));
      })
      .def("warp_redux", [](dsl::Tracer&, const std::string& kind, nb::handle value, nb::handle mask, bool abs, bool nan) {
        return dsl::warp_redux(ir::redux_kind_from_name(kind), to_num(value), to_num(mask), abs, nan);
      })
      .def("atomic_fmax", [](dsl::Tracer&, nb::handle ptr, nb::handle value, bool sign_bit, const std::string& sem,
                             const std::string& scope) {
        return dsl::atomic_fmax(to_num(ptr), to_num(value), sign_bit, sem, scope);
      })
      // `compare`: empty, or the one compare value of a cas.
      .def("atomic", [](dsl::Tracer&, const std::string& kind, nb::handle ptr, nb::handle value, nb::list compare,
                        const std::string& sem, const std::string& scope) {
        std::optional<Num> cmp;
        if (nb::len(compare) > 0) cmp = to_num(compare[0]);
        return dsl::atomic(ir::atomic_kind_from_name(kind), to_num(ptr), to_num(value), cmp ? &*cmp : nullptr, sem,
                           scope);
      })
      .def("smem_alloc", [](dsl::Tracer&, const std::string& dtype, int64_t count, int align) {
        return dsl::smem_alloc(dsl::dtype_from_name(dtype), count, align);
      })
      .def("dyn_smem", [](dsl::Tracer&, const std::string& dtype, int align) {
        return dsl::dyn_smem(dsl::dtype_from_name(dtype), align);
      })
      .def("dyn_smem_size", [](dsl::Tracer&) { return dsl::dyn_smem_size(); })
      .def("launch", [](dsl::Tracer& t, const std::string& kernel, nb::list grid, nb::list block, nb::handle smem,
                        nb::handle stream, nb::list cluster, nb::list args, int64_t flags, nb::list events,
                        std::vector<int64_t> event_attrs) {
        auto dims = [](nb::list l) {
          std::vector<ir::Value*> out;
          for (nb::handle h : l) out.push_back(dsl::materialize(dsl::convert(to_num(h), ir::i32())));
          return out;
        };
        std::vector<ir::Value*> cl;
        if (nb::len(cluster) > 0) cl = dims(cluster);
        ir::Value* sm = dsl::materialize(dsl::convert(to_num(smem), ir::i32()));
        ir::Value* st = dsl::materialize(dsl::convert(to_num(stream), ir::i64()));
        std::vector<ir::Value*> ev;
        for (nb::handle h : events) ev.push_back(dsl::materialize(dsl::convert(to_num(h), ir::i64())));
        t.builder().launch(kernel, dims(grid), dims(block), sm, st, cl, materialize_all(args), flags, ev, event_attrs);
      }, nb::arg("kernel"), nb::arg("grid"), nb::arg("block"), nb::arg("smem"), nb::arg("stream"), nb::arg("cluster"),
         nb::arg("args"), nb::arg("flags") = 0, nb::arg("events") = nb::list(),
         nb::arg("event_attrs") = std::vector<int64_t>());

  // ---- CUDA ----
  m.def("cuda_available", []() { return runtime::CudaDriver::get().available(); });
  // True when libNVVM is found (the ptx target compiles kernels with it; the GPU is not needed).
  m.def("libnvvm_available", []() {
    try {
      return !support::find_libnvvm().empty();
    } catch (const std::exception&) {
      return false;
    }
  });
  m.def("initialize_cuda_context", [](int device) { runtime::CudaDriver::get().initialize_context(device); });
  m.def("device_arch", [](int device) { return runtime::CudaDriver::get().device_arch(device); });
  m.def("device_attribute", [](int attr, int device) { return runtime::CudaDriver::get().device_attribute(attr, device); });
  // The part the emulator stands for with kernels for `arch` (support/arch.h), or None.
  m.def("emulated_part", [](const std::string& arch) -> nb::object {
    const support::EmulatedPart* p = support::emulated_part(support::parse_arch(arch));
    if (!p) return nb::none();
    nb::dict d;
    d["name"] = p->name;
    d["sm_count"] = p->sm_count;
    d["l2_cache_bytes"] = p->l2_cache_bytes;
    d["smem_per_sm_bytes"] = p->smem_per_sm_bytes;
    d["smem_per_block_bytes"] = p->smem_per_block_bytes;
    d["max_cluster_size_portable"] = p->max_cluster_size_portable;
    d["max_cluster_size_non_portable"] = p->max_cluster_size_non_portable;
    nb::list clusters;  // max_active_clusters of sizes 0 .. 16
    for (int n = 0; n <= 16; ++n) clusters.append(p->max_active_clusters(n));
    d["max_active_clusters"] = clusters;
    return d;
  }, nb::arg("arch"));
  // An architecture name read as support::parse_arch reads it: (number, suffix letter or ""), or
  // None when it is not one ("sm_100a" -> (100, "a")).
  m.def("parse_arch", [](const std::string& name) -> nb::object {
    const support::Arch a = support::parse_arch(name);
    if (!a.known()) return nb::none();
    return nb::make_tuple(a.number, a.suffix ? std::string(1, a.suffix) : std::string());
  }, nb::arg("name"));
  m.def("add_cuda_search_root", &support::add_cuda_search_root);
  m.def("compile_cache_dir", []() { return runtime::DiskCache::instance().dir(); });
  // Byte blobs of the Python layer (the preprocessor's rewritten code objects) in the folder "python"
  // inside the compile cache's, under its trust checks and its off switch (a folder of their own, so
  // a benchmark can empty the compiled kernels and keep these); each key carries this library's build.
  static auto blob_cache = []() -> runtime::DiskCache* {
    static runtime::DiskCache* cache = [] {
      const std::string dir = runtime::DiskCache::instance().dir();
      return new runtime::DiskCache(dir.empty() ? std::string() : dir + "/python");
    }();
    return cache;
  };
  m.def("cache_blob_load", [](const std::string& key) -> nb::object {
    if (support::env_flag("CUTE_DSL_DISABLE_FILE_CACHING")) return nb::none();
    runtime::DiskCache* cache = blob_cache();
    std::optional<runtime::CachedCode> hit;
    {
      nb::gil_scoped_release release;
      hit = cache->load("opencute blob\nbuild " + runtime::library_build_identity() + "\n" + key);
    }
    if (!hit) return nb::none();
    return nb::bytes(hit->ptx.data(), hit->ptx.size());
  }, nb::arg("key"));
  m.def("cache_blob_store", [](const std::string& key, nb::bytes data) {
    if (support::env_flag("CUTE_DSL_DISABLE_FILE_CACHING")) return;
    runtime::DiskCache* cache = blob_cache();
    runtime::CachedCode entry;
    entry.ptx.assign(data.c_str(), data.size());
    nb::gil_scoped_release release;
    cache->store("opencute blob\nbuild " + runtime::library_build_identity() + "\n" + key, entry);
  }, nb::arg("key"), nb::arg("data"));
  m.def("log", [](int level, const std::string& message) { support::log(support::LogLevel(level), message); });
  m.def("log_enabled", [](int level) { return support::log_enabled(support::LogLevel(level)); });
  m.def("reload_log_configuration", &support::reload_log_configuration);
  m.def("context_synchronize", []() { runtime::CudaDriver::get().context_synchronize(); });

  bindings::bind_compiled_functions(m);
  bindings::bind_tvm_ffi_functions(m);
  bindings::bind_xla_ffi_calls(m);
  bindings::bind_export(m);
  bindings::bind_traced_programs(m);
  bindings::bind_direct_calls(m);
  bindings::bind_dlpack_exchange_testing(m);
  bindings::bind_launch_floor(m);
  bindings::bind_layouts(m);
  bindings::bind_num_convert(m);
  bindings::bind_tensors(m);
  bindings::bind_mma(m);
  bindings::bind_runtime(m);
  bindings::bind_smem(m);
  bindings::bind_sm90(m);
  bindings::bind_cluster_launch_control(m);
  bindings::bind_sm100(m);
  bindings::bind_tensor_ssa(m);
  bindings::bind_carry(m);
  bindings::bind_async(m);
  bindings::bind_tensormap(m);
}
