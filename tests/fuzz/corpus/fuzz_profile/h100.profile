fovea-profile 2
device NVIDIA H100 80GB HBM3
sm 90
cudnn 91400
conv conv2d:n1:h64:w96:c3:k32:r3:s3:u1:v1:p1:q1:d1:e1:g1:a0:al0:b0:f16 path=graph cdecl=8 engine=0 ws=0 ms=0 how=autotune knobs=-
conv conv2d:n1:h128:w192:c4:k32:r3:s3:u1:v1:p1:q1:d1:e1:g1:a1:al0:b1:f16 path=graph cdecl=8 engine=7 ws=1048576 ms=0.125 how=autotune knobs=1:-1
plan 27 fff9ba3be583ebac ACVKb5S53gMoTXKXvOEGK1B1mr/kCS5TeJ3C
conv conv2d:n1:h256:w384:c5:k32:r3:s3:u1:v1:p1:q1:d1:e1:g1:a2:al0:b0:f16 path=legacy cdecl=8 engine=14 ws=2097152 ms=0.25 how=autotune knobs=1:-1,2:0
end 3
