fovea-profile 1
device NVIDIA H100 80GB HBM3
sm 90
cudnn 91900
conv conv2d:n1:h224:w224:c3:k64:r7:s7:u2:v2:p3:q3:d1:e1:g1:a1:al0:b1:f16 path=direct cdecl=4 engine=104 ws=0 ms=0.00809600018 how=autotune knobs=-
conv conv2d:n1:h56:w56:c64:k64:r3:s3:u1:v1:p1:q1:d1:e1:g1:a1:al0:b1:f16 path=graph-pw cdecl=64 engine=4 ws=0 ms=0.00691200001 how=autotune knobs=24:36
conv conv2d:n1:h56:w56:c64:k64:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b1:f16 path=graph-pw cdecl=64 engine=4 ws=0 ms=0.00687999977 how=autotune knobs=24:36
conv conv2d:n1:h56:w56:c64:k128:r3:s3:u2:v2:p1:q1:d1:e1:g1:a1:al0:b1:f16 path=graph-pw cdecl=64 engine=4 ws=0 ms=0.00675200019 how=autotune knobs=24:39
conv conv2d:n1:h28:w28:c128:k128:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b1:f16 path=graph-pw cdecl=128 engine=4 ws=0 ms=0.00758400001 how=autotune knobs=24:16
conv conv2d:n1:h56:w56:c64:k128:r1:s1:u2:v2:p0:q0:d1:e1:g1:a0:al0:b1:f16 path=graph-pw cdecl=64 engine=4 ws=0 ms=0.00518399989 how=autotune knobs=24:39
conv conv2d:n1:h28:w28:c128:k128:r3:s3:u1:v1:p1:q1:d1:e1:g1:a1:al0:b1:f16 path=graph-pw cdecl=128 engine=4 ws=0 ms=0.00767999981 how=autotune knobs=24:16
conv conv2d:n1:h28:w28:c128:k256:r3:s3:u2:v2:p1:q1:d1:e1:g1:a1:al0:b1:f16 path=graph-pw cdecl=128 engine=4 ws=0 ms=0.0072639999 how=autotune knobs=24:19
conv conv2d:n1:h14:w14:c256:k256:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b1:f16 path=graph-pw cdecl=256 engine=4 ws=0 ms=0.00966400001 how=autotune knobs=24:19
conv conv2d:n1:h28:w28:c128:k256:r1:s1:u2:v2:p0:q0:d1:e1:g1:a0:al0:b1:f16 path=graph-pw cdecl=128 engine=4 ws=0 ms=0.00518399989 how=autotune knobs=24:19
conv conv2d:n1:h14:w14:c256:k256:r3:s3:u1:v1:p1:q1:d1:e1:g1:a1:al0:b1:f16 path=graph-pw cdecl=256 engine=4 ws=0 ms=0.00940799993 how=autotune knobs=24:19
conv conv2d:n1:h14:w14:c256:k512:r3:s3:u2:v2:p1:q1:d1:e1:g1:a1:al0:b1:f16 path=graph-pw cdecl=256 engine=4 ws=0 ms=0.0101119997 how=autotune knobs=24:16
conv conv2d:n1:h7:w7:c512:k512:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b1:f16 path=graph cdecl=512 engine=41 ws=0 ms=0.0140479999 how=autotune knobs=2:5,13:1,18:0,25:1,27:4,28:1
conv conv2d:n1:h14:w14:c256:k512:r1:s1:u2:v2:p0:q0:d1:e1:g1:a0:al0:b1:f16 path=graph-pw cdecl=256 engine=4 ws=0 ms=0.005504 how=autotune knobs=24:19
conv conv2d:n1:h7:w7:c512:k512:r3:s3:u1:v1:p1:q1:d1:e1:g1:a1:al0:b1:f16 path=graph cdecl=512 engine=41 ws=0 ms=0.0139840003 how=autotune knobs=2:5,13:1,18:0,25:1,27:4,28:1
conv conv2d:n1:h1:w1:c512:k1000:r1:s1:u1:v1:p0:q0:d1:e1:g1:a0:al0:b1:f16 path=graph cdecl=512 engine=39 ws=0 ms=0.00624000002 how=autotune knobs=25:2
end 16
