/* A smoke run of a built Soft Sim native library, for a platform this machine can only emulate (tools/cross_check.py
 * builds this program for Linux and for Windows with zig cc and runs the Windows one under Wine).
 *
 * It loads the library given as argv[1] the way Blender's Python would (dlopen / LoadLibraryA), resolves
 * softsim_abi_version and softsim_distance_sweep, runs ten XPBD distance sweeps over a fixed, stretched 8 x 8 grid
 * cloth (its four colours: horizontal and vertical edges, each split by parity) and prints the ABI version and the
 * resulting positions as hexadecimal doubles. Two libraries built from the same sources for the same ISA must print
 * the same text: it checks that the library loads with the platform's loader, that its exports and C runtime imports
 * resolve, and that its arithmetic matches bit for bit.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(_WIN32)
#include <windows.h>
typedef HMODULE library_t;
static library_t open_library(const char *path) { return LoadLibraryA(path); }
static void *symbol(library_t lib, const char *name) { return (void *)GetProcAddress(lib, name); }
#else
#include <dlfcn.h>
typedef void *library_t;
static library_t open_library(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
static void *symbol(library_t lib, const char *name) { return dlsym(lib, name); }
#endif

typedef int64_t (*abi_version_fn)(void);
typedef void (*distance_sweep_fn)(double *, int64_t, const int64_t *, const int64_t *, const double *, const double *,
                                  const double *, const double *, const double *, double *, int64_t);

enum { SIDE = 8, PARTICLES = SIDE * SIDE, EDGES = 2 * SIDE * (SIDE - 1), SWEEPS = 10 };

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s LIBRARY\n", argv[0]);
        return 2;
    }
    library_t lib = open_library(argv[1]);
    if (!lib) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    abi_version_fn abi_version = (abi_version_fn)symbol(lib, "softsim_abi_version");
    distance_sweep_fn sweep = (distance_sweep_fn)symbol(lib, "softsim_distance_sweep");
    if (!abi_version || !sweep) {
        fprintf(stderr, "missing export in %s\n", argv[1]);
        return 1;
    }

    /* A 1 m grid at 1/7 m spacing, stretched by 30% along x and lifted in a wave, so every edge has work to do. */
    double x[3 * PARTICLES];
    for (int i = 0; i < SIDE; ++i)
        for (int j = 0; j < SIDE; ++j) {
            double *p = x + 3 * (i * SIDE + j);
            p[0] = 1.3 * j / (SIDE - 1.0);
            p[1] = i / (SIDE - 1.0);
            p[2] = 0.05 * ((i * 7 + j * 3) % 5);
        }
    /* Colours: horizontal edges from even columns, from odd columns, then vertical edges from even rows, odd rows. */
    int64_t edges[2 * EDGES], start[5];
    int64_t e = 0, c = 0;
    for (int horizontal = 1; horizontal >= 0; --horizontal)
        for (int parity = 0; parity < 2; ++parity) {
            start[c++] = e;
            for (int i = 0; i < SIDE; ++i)
                for (int j = parity; j < SIDE - 1; j += 2) {
                    int a = horizontal ? i * SIDE + j : j * SIDE + i;
                    int b = horizontal ? a + 1 : a + SIDE;
                    edges[2 * e] = a;
                    edges[2 * e + 1] = b;
                    ++e;
                }
        }
    start[c] = e;
    double rest[EDGES], w_i[EDGES], w_j[EDGES], alpha[EDGES], inverse[EDGES], lambda[EDGES];
    for (int k = 0; k < EDGES; ++k) {
        rest[k] = 1.0 / (SIDE - 1.0);
        w_i[k] = edges[2 * k] < SIDE ? 0.0 : 1.0; /* the first row is pinned */
        w_j[k] = edges[2 * k + 1] < SIDE ? 0.0 : 1.0;
        alpha[k] = 1e-4 * 720.0 * 720.0 * 1e-6; /* compliance / dt^2 */
        inverse[k] = 1.0 / (w_i[k] + w_j[k] + alpha[k]);
        lambda[k] = 0.0;
    }
    for (int s = 0; s < SWEEPS; ++s)
        sweep(x, 4, start, edges, rest, w_i, w_j, alpha, inverse, lambda, 1);

    printf("abi %lld\n", (long long)abi_version());
    for (int k = 0; k < 3 * PARTICLES; ++k) {
        uint64_t bits;
        memcpy(&bits, x + k, sizeof bits);
        printf("%016llx%c", (unsigned long long)bits, k % 6 == 5 ? '\n' : ' ');
    }
    for (int k = 0; k < EDGES; ++k) {
        uint64_t bits;
        memcpy(&bits, lambda + k, sizeof bits);
        printf("%016llx%c", (unsigned long long)bits, k % 6 == 5 ? '\n' : ' ');
    }
    printf("\n");
    return 0;
}
