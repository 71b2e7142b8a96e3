/* mbstate_t for the C++ library (libc++ looks for it here when built without wide
 * characters, as device builds are); a core has only the "C" locale, so it is never used. */
#pragma once
typedef struct {
    int __count;
    unsigned __value;
} mbstate_t;
