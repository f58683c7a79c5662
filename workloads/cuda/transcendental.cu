// float transcendentals with the fast intrinsics (MUFU): exp, log, sin, cos, rsqrt, division
extern "C" __global__ void transcendental(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    y[i] = __expf(-v) + __logf(1.0f + v) + __sinf(v) * __cosf(v) + rsqrtf(1.0f + v) + __fdividef(1.0f, 2.0f + v);
}
