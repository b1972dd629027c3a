/* Image file sinks: file://out_%04d.png (numbered from 0) or file://out.jpg
 * (one file, rewritten each frame), through fv_image_file_save (which writes
 * a temporary file and renames it, so a reader never sees half a frame). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io_internal.h"

#define JPEG_QUALITY 90

typedef struct images_sink {
    int numbered;
    fv__index_pattern pat;
    char name[8256]; /* the file being written */
} images_sink;

static fv_status images_write(fv_sink *sink, const fv_image *frame, int64_t timestamp_ns) {
    images_sink *is = sink->impl;
    (void)timestamp_ns;
    const char *name;
    if (is->numbered) {
        unsigned long long i = (unsigned long long)sink->info.frames;
        fv__index_pattern_name(&is->pat, i, is->name, sizeof is->name);
        name = is->name;
    } else {
        name = sink->info.name;
    }
    fv_image_save_desc sd = {.jpeg_quality = JPEG_QUALITY};
    fv_status s = fv_image_file_save(name, frame, &sd);
    if (s == FV_OK) return FV_OK;
    /* fv_last_error() lives in the buffer fv__error writes: copy it first. */
    char why[1024];
    snprintf(why, sizeof why, "%s", fv_last_error());
    return fv__error(s == FV_ERR_OUT_OF_MEMORY ? s : FV_ERR_IO, "sink_write: '%s': frame %llu: %s",
                     name, (unsigned long long)sink->info.frames, why);
}

static fv_status images_close(fv_sink *sink) {
    free(sink->impl);
    sink->impl = NULL;
    return FV_OK;
}

static const fv__sink_ops images_ops = {images_write, images_close, NULL};

fv_status fv__sink_open_images(fv_sink *sink, const char *path) {
    const char *op = "sink_open";
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    int jpeg = dot && (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0);
    int png = dot && strcasecmp(dot, ".png") == 0;
    if (!jpeg && !png)
        return fv__error(FV_ERR_BAD_PARAM,
                         "%s: '%s': extension '%s' is not supported: image files .png, .jpg, "
                         ".jpeg (numbered with %%d, e.g. out_%%04d.png); video files .mp4, .mkv",
                         op, path, dot ? dot : "");
    if (strlen(path) >= sizeof sink->info.name)
        return fv__error(FV_ERR_BAD_PARAM, "%s: '%s': path of %zu characters is too long (max %zu)",
                         op, path, strlen(path), sizeof sink->info.name - 1);
    images_sink *is = calloc(1, sizeof *is);
    if (!is) return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: '%s': out of host memory", op, path);
    int numbered = fv__index_pattern_parse(op, path, &is->pat);
    if (numbered < 0) {
        free(is);
        return FV_ERR_BAD_PARAM;
    }
    is->numbered = numbered;
    /* The directory must exist and take new files. */
    char dir[4096];
    if (!slash) {
        snprintf(dir, sizeof dir, ".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof dir) n = sizeof dir - 1;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    struct stat st;
    const char *why = NULL;
    if (stat(dir, &st) != 0)
        why = strerror(errno);
    else if (!S_ISDIR(st.st_mode))
        why = "not a directory";
    else if (access(dir, W_OK | X_OK) != 0)
        why = strerror(errno);
    if (why) {
        free(is);
        return fv__error(FV_ERR_IO, "%s: '%s': cannot write into directory '%s': %s", op, path, dir,
                         why);
    }
    snprintf(sink->info.kind, sizeof sink->info.kind, "%s", numbered ? "images" : "image");
    snprintf(sink->info.name, sizeof sink->info.name, "%s", path);
    if (jpeg)
        snprintf(sink->info.detail, sizeof sink->info.detail, "JPEG q%d", JPEG_QUALITY);
    else
        snprintf(sink->info.detail, sizeof sink->info.detail, "PNG");
    sink->impl = is;
    sink->ops = &images_ops;
    return FV_OK;
}
