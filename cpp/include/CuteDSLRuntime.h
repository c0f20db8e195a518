/* OpenCuTe's C runtime API for exported CuTe DSL functions (`compiled.export_to_c`).
 *
 * The names follow NVIDIA's CuTe DSL runtime (`CuteDSLRuntime.h`), so C and C++ programs written
 * for it build against OpenCuTe's `libcute_dsl_runtime.so`. No Python is involved: the runtime
 * interprets the exported host program and launches its kernels through the CUDA driver.
 *
 *   CuteDSLRT_Module_t *module;
 *   CuteDSLRT_Module_Create_From_Bytes(&module, object_file_bytes, size, NULL, 0);
 *   // or, from shared libraries built from exported objects:
 *   CuteDSLRT_Module_Create_From_Bytes(&module, NULL, 0, paths, num_paths);
 *   CuteDSLRT_Function_t *fn;
 *   CuteDSLRT_Module_Get_Function(&fn, module, "add_one");
 *   int32_t status;                          // 0, or the CUresult of a failed CUDA call
 *   void *args[] = {&a, &b, &stream, &status};  // as the exported header documents
 *   CuteDSLRT_Function_Run(fn, args, 4);
 *   CuteDSLRT_Module_Destroy(module);
 */
#ifndef CUTE_DSL_RUNTIME_H
#define CUTE_DSL_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* the example drivers written for NVIDIA's runtime print through it */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum CuteDSLRT_Error_t {
  CuteDSLRT_Error_Success = 0,
  CuteDSLRT_Error_Invalid_Argument = 1,   /* a null pointer, a wrong argument count */
  CuteDSLRT_Error_Not_Found = 2,          /* no exported function of that name */
  CuteDSLRT_Error_Load_Failed = 3,        /* unreadable file, damaged or foreign blob */
  CuteDSLRT_Error_Argument_Mismatch = 4,  /* an argument the function was not compiled for */
  CuteDSLRT_Error_Cuda = 5,               /* a CUDA driver call failed (status holds the CUresult) */
  CuteDSLRT_Error_Execution = 6           /* the host program failed (e.g. an assertion) */
} CuteDSLRT_Error_t;

typedef struct CuteDSLRT_Module CuteDSLRT_Module_t;
typedef struct CuteDSLRT_Function CuteDSLRT_Function_t;

/* Loads every exported function found in `bytes` (an exported object file's contents) and in
 * each file of `shared_libs` (shared libraries or object files built from exported objects). */
CuteDSLRT_Error_t CuteDSLRT_Module_Create_From_Bytes(CuteDSLRT_Module_t **module, const void *bytes, size_t size,
                                                     const char *const *shared_libs, size_t num_shared_libs);
CuteDSLRT_Error_t CuteDSLRT_Module_Get_Function(CuteDSLRT_Function_t **function, CuteDSLRT_Module_t *module,
                                                const char *name);
/* args: one pointer per argument of the exported function, one per result, and last a pointer
 * to an int32_t status (0, or the CUresult of a failed CUDA call). */
CuteDSLRT_Error_t CuteDSLRT_Function_Run(CuteDSLRT_Function_t *function, void **args, size_t num_args);
CuteDSLRT_Error_t CuteDSLRT_Module_Destroy(CuteDSLRT_Module_t *module);
/* Why the calling thread's last failing call failed ("" after a success). */
const char *CuteDSLRT_Get_Last_Error(void);

#ifdef __cplusplus
}
#endif

#endif /* CUTE_DSL_RUNTIME_H */
