// A table that claims more kernels than entry_func accepts (SUNDA_UCODE_LIB_FAILURE_NUM_KERNELS).
#include "neuron_customop.hpp"
static int nothing() { return 0; }
int get_func_cnt() { return 0x8000; }
char const *get_func_name(int) { return "k"; }
wrapper_fn get_func_ptr(int) { return nothing; }
