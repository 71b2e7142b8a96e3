/* Where the runtime's copy log lies (D120): pool-core.ld places `customop_copy_log` in
   the last bytes of the core's image slot, past what the image loads. The reference is
   weak, so a link whose script does not place it (the vendor's link line) still links,
   the address reads 0, and the runtime logs nothing. */
extern char customop_copy_log[] __attribute__((weak));

void *customop_copy_log_address(void) { return customop_copy_log; }
