/* What the device C headers declare only so that the C++ library's <c*> wrappers can name
 * them: a Pool core has no file system, clock, environment or locales, and the device
 * runtime does not define these. A call that survives optimisation fails the build with a
 * message naming the function (GCC's error attribute), instead of an undefined symbol at
 * link time (docs/decisions.md D72). */
#pragma once
#define __NEURON_UNAVAILABLE(what) \
    __attribute__((__error__(what " is not available in device builds (docs/decisions.md D72)")))
