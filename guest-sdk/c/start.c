/* The `_start` entry point of the C guests, which are linked as WASI reactors
 * (`clang -mexec-model=reactor`) rather than as commands.
 *
 * Why: in a module linked as a command, wasm-ld wraps every other export in
 * calls to the C constructors and destructors, `cabi_realloc` included. The
 * host calls `cabi_realloc` to hand the guest a string (the text of a lock
 * error, for example), and there wasi-libc's constructors call WASI imports,
 * which the component model forbids inside `cabi_realloc`: the instance traps
 * ("cannot leave component instance"). A reactor's exports are not wrapped;
 * its constructors run once, from `_initialize`, which the component calls on
 * instantiation. The command adapter then runs this `_start` as `wasi:cli/run`. */

#include <stdlib.h>

/* wasi-libc: reads the WASI arguments and calls main(argc, argv). */
int __main_void(void);

__attribute__((export_name("_start"))) void wardlock_guest_start(void) {
    exit(__main_void());
}
