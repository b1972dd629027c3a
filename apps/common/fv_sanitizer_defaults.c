/* Built into the programs that load GStreamer, in sanitizer builds only
 * (FV_SANITIZE with address): LeakSanitizer's defaults, so that a program
 * run by hand is as leak-clean as its tests (tests/unit/test_gst.lsan.supp,
 * the same two suppressions). GLib's library constructor allocates once per
 * process when the loader runs it and keeps the block by design; fontconfig
 * keeps its configuration cache for the life of the process. Seeing the
 * loader's frame (_dl_init) under GLib, which has no frame pointers, takes
 * the slow unwinder on malloc: these programs allocate little per frame.
 * ASAN_OPTIONS and LSAN_OPTIONS still override both. */
const char *__asan_default_options(void);
const char *__lsan_default_suppressions(void);

const char *__asan_default_options(void) {
    return "fast_unwind_on_malloc=0";
}

const char *__lsan_default_suppressions(void) {
    return "leak:_dl_init\nleak:libfontconfig.so\n";
}
