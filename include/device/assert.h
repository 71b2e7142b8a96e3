/* assert.h for device objects: a failed assertion ends the kernel as a device fault whose
 * message names the expression, file, line and function, as glibc's words it (D68). */
#ifdef __cplusplus
extern "C" {
#endif
__attribute__((noreturn)) void __assert_fail(const char *assertion, const char *file,
                                             unsigned int line, const char *function);
#ifdef __cplusplus
}
#endif
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : __assert_fail(#e, __FILE__, __LINE__, __func__))
#endif
#if !defined(__cplusplus) && !defined(static_assert)
#define static_assert _Static_assert
#endif
