// The three author symbols an op library defines (the op build helper generates them from
// the schema); here, one launcher.
typedef int (*launcher_t)();
extern "C" int op_main(void);
int get_func_cnt() { return 1; }
const char *get_func_name(int) { return "op_main"; }
launcher_t get_func_ptr(int) { return op_main; }
