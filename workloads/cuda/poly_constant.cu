// y = a polynomial of x whose 8 coefficients live in __constant__ memory (Horner's rule)
__constant__ float coeffs[8] = {1.0f, -0.5f, 0.25f, -0.125f, 0.0625f, -0.03125f, 0.015625f, -0.0078125f};
extern "C" __global__ void poly(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], acc = coeffs[7];
    #pragma unroll
    for (int c = 6; c >= 0; c--) acc = acc * v + coeffs[c];
    y[i] = acc;
}
