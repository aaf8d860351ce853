/* The library's identity: the loader compares this with the version its bindings were written for. */
#include "softsim_native.h"

int64_t softsim_abi_version(void) { return SOFTSIM_ABI_VERSION; }
