// A device op calling what the device libc lacks: the link must fail naming it.
struct FILE;
extern "C" FILE *fopen(const char *, const char *);
extern "C" int op_main(void) { return fopen("x", "r") != nullptr; }
