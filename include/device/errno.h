/* errno.h for device objects: the core's errno (the device libc sets ERANGE and EINVAL
 * where C and POSIX say so), with Linux's numbers. */
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
int *__neuron_errno(void);
#define errno (*__neuron_errno())
#define ENOMEM 12
#define EINVAL 22
#define EDOM 33
#define ERANGE 34
#define EILSEQ 84
#ifdef __cplusplus
}
#endif
