/* fovea-regress, section "golden": the bundled images through the edge
 * filters against the OpenCV references of tests/golden (installed to
 * share/fovea/golden), with the golden test's tolerance (golden_check.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fovea/platform/image_io.h"
#include "golden_check.h"
#include "regress.h"

void rg_run_golden(rg_report *r, fv_context *ctx, const char *cases, const char *refs,
                   const char *data) {
    enum { MAXC = 64 };
    golden_case cs[MAXC];
    int n = golden_read_cases(cases, cs, MAXC);
    if (n <= 0) {
        rg_add(r, "golden", "cases", RG_FAIL, NAN, NAN, "", "%s %s (pass --golden DIR)", cases,
               n < 0 ? "cannot be opened" : "lists no case");
        return;
    }
    for (int i = 0; i < n; i++) {
        const golden_case *c = &cs[i];
        /* --quick: the grey Laplacian and the colour Sobel of each image */
        int lap = strcmp(c->filter, "laplacian") == 0, ch = golden_channels(c);
        if (r->quick && !((lap && ch == 1) || (!lap && ch == 3))) continue;
        char name[96], path[4096];
        snprintf(name, sizeof name, "%.40s %s %s", c->image, c->filter, c->output);
        fv_host_image img, ref;
        memset(&img, 0, sizeof img);
        memset(&ref, 0, sizeof ref);
        unsigned char *got = NULL;
        snprintf(path, sizeof path, "%s/%s", data, c->image);
        fv_status s = fv_image_file_load(path, FV_PIXEL_RGB24, &img);
        if (s == FV_OK) {
            snprintf(path, sizeof path, "%s/%s", refs, c->ref);
            s = fv_image_file_load(path, ch == 3 ? FV_PIXEL_RGB24 : FV_PIXEL_GRAY8, &ref);
        }
        if (s != FV_OK) {
            rg_add(r, "golden", name, RG_FAIL, NAN, NAN, "", "%s: %s (pass --data / --golden)",
                   fv_status_name(s), fv_last_error());
            goto next;
        }
        if (ref.width != c->w || ref.height != c->h) {
            rg_add(r, "golden", name, RG_FAIL, NAN, NAN, "", "reference is %dx%d, the case %dx%d",
                   ref.width, ref.height, c->w, c->h);
            goto next;
        }
        size_t nb = (size_t)c->w * c->h * ch;
        got = malloc(nb);
        if (!got) {
            rg_add(r, "golden", name, RG_FAIL, NAN, NAN, "", "out of host memory");
            goto next;
        }
        memset(got, 0xCD, nb);
        fv_clear_error();
        s = golden_run(ctx, c, &img, got);
        if (s != FV_OK) {
            rg_add(r, "golden", name, RG_FAIL, NAN, NAN, "", "%s: %s", fv_status_name(s),
                   s == FV_ERR_BAD_PARAM && !fv_last_error()[0] ? "the crop does not fit the image"
                                                                : fv_last_error());
            goto next;
        }
        golden_stats st;
        golden_compare(got, ref.data, nb, &st);
        rg_add(r, "golden", name, golden_pass(&st) ? RG_PASS : RG_FAIL, st.max, GOLDEN_MAX_DIFF,
               "max_diff", "max |diff| %d (<= %d), %.3f%% within 1 (>= %.1f%%), mean %.4f", st.max,
               GOLDEN_MAX_DIFF, 100.0 * st.within1 / nb, 100.0 * GOLDEN_MIN_WITHIN1, st.mean);
    next:
        free(got);
        fv_host_image_free(&ref);
        fv_host_image_free(&img);
    }
}
