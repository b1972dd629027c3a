/* fovea-regress's profile-key parser (apps/fovea-regress/regress_key.c):
 * keys the SDK writes (fv__conv2d_key) parse back into the same desc and
 * format to the same text; malformed keys are refused with a message naming
 * the field. */
#include <stdio.h>
#include <string.h>
#include "fv_test.h"
#include "core/profile.h"
#include "regress_key.h"

static const fv_conv2d_desc descs[] = {
    {.h = 1080,
     .w = 1920,
     .c = 3,
     .k = 32,
     .r = 5,
     .s = 5,
     .pad_h = 2,
     .pad_w = 2,
     .activation = FV_ACT_RELU},
    {.n = 2,
     .h = 29,
     .w = 37,
     .c = 5,
     .k = 7,
     .r = 3,
     .s = 1,
     .stride_h = 2,
     .stride_w = 3,
     .pad_h = 1,
     .pad_w = 0,
     .dilation_h = 2,
     .dilation_w = 1},
    {.h = 64,
     .w = 64,
     .c = 16,
     .k = 16,
     .r = 3,
     .s = 3,
     .groups = 16,
     .activation = FV_ACT_LEAKY_RELU,
     .activation_alpha = 0.1f},
    {.h = 64, .w = 64, .c = 16, .k = 16, .r = 3, .s = 3, .activation = FV_ACT_LEAKY_RELU},
    {.h = 8, .w = 8, .c = 8, .k = 8, .r = 3, .s = 3, .activation = FV_ACT_CLIPPED_RELU},
    {.h = 8,
     .w = 8,
     .c = 8,
     .k = 8,
     .r = 3,
     .s = 3,
     .activation = FV_ACT_CLIPPED_RELU,
     .activation_alpha = 3.5f,
     .dtype = FV_DTYPE_F32},
    {.h = 8, .w = 8, .c = 8, .k = 24, .r = 1, .s = 1, .groups = 2, .activation = FV_ACT_SIGMOID},
    {.h = 8,
     .w = 8,
     .c = 4,
     .k = 4,
     .r = 1,
     .s = 1,
     .activation = FV_ACT_TANH,
     .activation_alpha = 2.0f},
};

static void sdk_keys_round_trip(void **state) {
    for (size_t i = 0; i < sizeof descs / sizeof descs[0]; i++)
        for (int bias = 0; bias <= 1; bias++) {
            char sdk[FV__PROFILE_KEY], mine[FV__PROFILE_KEY], again[FV__PROFILE_KEY], err[256];
            fv__conv2d_key(&descs[i], bias, sdk, sizeof sdk);
            regress_key_format(&descs[i], bias, mine, sizeof mine);
            assert_string_equal(mine, sdk);
            fv_conv2d_desc d;
            int b = -1;
            if (regress_key_parse(sdk, &d, &b, err, sizeof err) != 0) fail_msg("%s: %s", sdk, err);
            assert_int_equal(b, bias);
            fv__conv2d_key(&d, b, again, sizeof again);
            assert_string_equal(again, sdk);
            assert_int_equal(d.h, descs[i].h);
            assert_int_equal(d.k, descs[i].k);
            assert_int_equal(d.dtype, descs[i].dtype);
            assert_null(d.weights);
        }
}

static void bad_keys_are_refused(void **state) {
    static const struct {
        const char *key, *needle;
    } bad[] = {
        {"", "conv2d:"},
        {"conv3d:n1:h8:w8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b0:f16", "conv2d:"},
        {"conv2d:n1:h8:w8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b0", "dtype"},
        {"conv2d:n1:h8:w8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b0:f64", "f64"},
        {"conv2d:n1:h8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b0:f16", "'c8'"},
        {"conv2d:n1:h0:w8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b0:f16", "h0"},
        {"conv2d:n1:hx:w8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b0:f16", "'hx'"},
        {"conv2d:n1:h8:w8:c8:k8:r3:s3:u1:v1:p-1:q1:d1:e1:g1:a0:al0:b0:f16", "p-1"},
        {"conv2d:n1:h8:w8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a9:al0:b0:f16", "activation"},
        {"conv2d:n1:h8:w8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:alx:b0:f16", "alpha"},
        {"conv2d:n1:h8:w8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b2:f16", "b0 or b1"},
        {"conv2d:n1:h8:w8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g3:a0:al0:b0:f16", "groups"},
        {"conv2d:n1:h2:w2:c8:k8:r5:s5:u1:v1:p0:q0:d1:e1:g1:a0:al0:b0:f16", "does not fit"},
        {"conv2d:n1:h8:w8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b0:f16:x", "unexpected"},
        {"conv2d:n1:h08:w8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b0:f16", "SDK's form"},
        {"conv2d:n1:h8:w8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a1:al0.5:b0:f16", "SDK's form"},
        {"conv2d:n1:h8:w8:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a2:al0:b0:f16", "SDK's form"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fv_conv2d_desc d;
        int b;
        char err[256] = "";
        if (regress_key_parse(bad[i].key, &d, &b, err, sizeof err) == 0)
            fail_msg("'%s' was accepted", bad[i].key);
        if (!strstr(err, bad[i].needle))
            fail_msg("'%s': message '%s' lacks '%s'", bad[i].key, err, bad[i].needle);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(sdk_keys_round_trip),
                                       cmocka_unit_test(bad_keys_are_refused)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
