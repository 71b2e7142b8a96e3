/* Global constructors of a Pool core's op image. The vendor's entry_func runs the CRT
   bootstrap (__clibrary_init, then _init: the image's constructors) after learning its
   scratch areas and before registering kernels, once per load (device-customop.md 2.3);
   ours calls __neuron_run_ctors at that point. The image's link script (pool-core.ld)
   brackets .ctors (what this GCC emits; run last to first, as crtstuff does) and
   .init_array (run first to last). The brackets are weak: an image linked without them
   runs no constructors rather than failing to link. Built windowed into
   libneuroncustomop.a by build-archive.sh. */
typedef void (*ctor_fn)(void);

extern ctor_fn __neuron_ctors_start[] __attribute__((weak));
extern ctor_fn __neuron_ctors_end[] __attribute__((weak));
extern ctor_fn __neuron_init_array_start[] __attribute__((weak));
extern ctor_fn __neuron_init_array_end[] __attribute__((weak));

static int ran;

/* An entry is a function, or 0 / -1 where a crtbegin-style list marks its ends. */
static int callable(ctor_fn f) { return f != 0 && f != (ctor_fn)-1; }

void __neuron_run_ctors(void) {
    if (ran) return;
    ran = 1;
    if (__neuron_ctors_start && __neuron_ctors_end)
        for (ctor_fn *p = __neuron_ctors_end; p > __neuron_ctors_start;) {
            ctor_fn f = *--p;
            if (callable(f)) f();
        }
    if (__neuron_init_array_start && __neuron_init_array_end)
        for (ctor_fn *p = __neuron_init_array_start; p < __neuron_init_array_end; p++)
            if (callable(*p)) (*p)();
}
