// Ahead-of-time export: the blob round-trips through bytes that surround it (an object file),
// the C argument structs have the layout a C compiler gives them, and an exported host program
// runs from C argument pointers.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "runtime/export.h"
#include "runtime/exported_program.h"

using namespace opencute;
using runtime::SlotKind;

namespace {

// host f(data: f32* align 16, n: i32 (shape 0), m: i32 (shape 2), s: i64 (stride 1), k: i32) -> (i32, i64)
// returns (n * 100 + m + k, s * 2); the tensor is source 0 (shape (?, 3, ?{div=4}) : (1, ?, 7)), k is source 1.
runtime::ExportedFunction probe_function() {
  ir::Module m;
  ir::Function* f = m.add_function("probe", ir::FunctionKind::Host);
  ir::Value* data = f->body->add_arg(ir::pointer_type(ir::f32(), ir::AddrSpace::Gmem, 16));
  (void)data;
  ir::Value* n = f->body->add_arg(ir::i32());
  ir::Value* mm = f->body->add_arg(ir::i32());
  ir::Value* s = f->body->add_arg(ir::i64());
  ir::Value* k = f->body->add_arg(ir::i32());
  f->result_types = {ir::i32(), ir::i64()};
  ir::Builder b(f->body.get());
  ir::Value* r0 =
      b.binary(ir::OpCode::Add, b.binary(ir::OpCode::Add, b.binary(ir::OpCode::Mul, n, b.const_int(ir::i32(), 100)), mm), k);
  ir::Value* r1 = b.binary(ir::OpCode::Mul, s, b.const_int(ir::i64(), 2));
  b.ret({r0, r1});
  runtime::ExportedFunction e;
  e.name = "probe";
  e.function_name = "probe";
  e.arch = "sm_90a";
  e.module_text = ir::print_module(m);
  e.cubin = {'\x7f', 'E', 'L', 'F', '\0', '\1'};
  e.plan.slots = {{0, SlotKind::TensorData, 0}, {0, SlotKind::TensorShape, 0}, {0, SlotKind::TensorShape, 2},
                  {0, SlotKind::TensorStride, 1}, {1, SlotKind::Scalar, 0}};
  e.plan.checks = {{0, {-1, 3, -1}, {1, -1, 7}, {1, 1, 4}, {1, 1, 1}, false, "(?,3,?{div=4}):(1,?,7)", "t", {}}};
  e.plan.num_sources = 2;
  e.plan.arg_names = {"t", "k"};
  return e;
}

// The struct the generated header declares for `t`, as a C compiler lays it out.
struct ProbeTensor {
  void* data;
  int32_t dynamic_shapes[2];
  int64_t dynamic_strides[1];
};

}  // namespace

TEST(Export, BlobRoundTripsInsideOtherBytes) {
  runtime::ExportedFunction f = probe_function();
  runtime::ExportedFunction g = probe_function();
  g.name = "other";
  std::string file = "\x7f" "ELF header bytes" + runtime::serialize_exported_function(f) + std::string(13, '\0') +
                     runtime::serialize_exported_function(g) + "trailer";
  auto found = runtime::find_exported_functions(file.data(), file.size());
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].name, "probe");
  EXPECT_EQ(found[1].name, "other");
  EXPECT_EQ(found[0].module_text, f.module_text);
  EXPECT_EQ(found[0].cubin, f.cubin);
  ASSERT_EQ(found[0].plan.slots.size(), 5u);
  EXPECT_EQ(found[0].plan.slots[3].kind, SlotKind::TensorStride);
  EXPECT_EQ(found[0].plan.slots[3].mode, 1);
  EXPECT_EQ(found[0].plan.checks[0].shape_div, (std::vector<int64_t>{1, 1, 4}));
  EXPECT_EQ(found[0].plan.arg_names, f.plan.arg_names);
  EXPECT_TRUE(runtime::find_exported_functions(file.data(), 10).empty());
}

TEST(Export, DamagedBlobIsAnError) {
  std::string blob = runtime::serialize_exported_function(probe_function());
  std::string cut = blob.substr(0, blob.size() - 5);
  EXPECT_THROW(runtime::find_exported_functions(cut.data(), cut.size()), std::runtime_error);
}

TEST(Export, TensorStructLayoutMatchesTheCCompilers) {
  runtime::ExportedFunction f = probe_function();
  auto module = ir::parse_module(f.module_text);
  auto params = runtime::c_parameters(f, *module->host());
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].kind, runtime::CParameter::Tensor);
  EXPECT_EQ(params[0].shapes_offset, offsetof(ProbeTensor, dynamic_shapes));
  EXPECT_EQ(params[0].strides_offset, offsetof(ProbeTensor, dynamic_strides));
  EXPECT_EQ(params[1].kind, runtime::CParameter::Scalar);
  std::string header = runtime::export_c_header(f, *module->host(), "probe");
  EXPECT_NE(header.find("typedef struct {\n  void *data;\n  int32_t dynamic_shapes[2];\n  int64_t dynamic_strides[1];\n"
                        "} probe_Tensor_t_t;"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("int32_t cute_dsl_probe_wrapper(probe_Kernel_Module_t *module, probe_Tensor_t_t *t, "
                        "int32_t k, int32_t *result0, int64_t *result1);"),
            std::string::npos)
      << header;
}

TEST(Export, ProgramRunsFromCArguments) {
  runtime::ExportedProgram program(probe_function());
  alignas(16) float buffer[4];
  ProbeTensor t{buffer, {5, 8}, {-21}};
  int32_t k = 3, r0 = 0, status = -1;
  int64_t r1 = 0;
  void* args[] = {&t, &k, &r0, &r1, &status};
  program.run(args, 5);
  EXPECT_EQ(r0, 5 * 100 + 8 + 3);
  EXPECT_EQ(r1, -42);
  EXPECT_EQ(status, 0);
  // What the code assumed of the tensor is checked.
  t.dynamic_shapes[1] = 6;
  EXPECT_THROW(program.run(args, 5), runtime::ExportedCallError);
  t.dynamic_shapes[1] = 8;
  t.data = reinterpret_cast<char*>(buffer) + 4;
  EXPECT_THROW(program.run(args, 5), runtime::ExportedCallError);
  EXPECT_THROW(program.run(args, 4), runtime::ExportedCallError);
}
