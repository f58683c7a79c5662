// Loops and indices in 64-bit integers, as code written for large arrays has them: a grid-stride
// loop over a size_t-style count, a long long bound compared each step, int64 index arithmetic
// and a 64-bit comparison of the data itself (ptxas: IADD.CC / IADD.X, ISETP.X, ISET.X)
extern "C" __global__ void strided_scale64(const float* x, float* y, long long n, long long stride, float a)
{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        long long mirror = n - 1 - i;
        y[i] = a * x[i] + x[mirror];
    }
}

extern "C" __global__ void count_above64(const long long* v, const unsigned long long* u, long long threshold,
                                         unsigned long long limit, int* flags, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long d = v[i] - threshold;
    int f = 0;
    if (v[i] > threshold) f |= 1;
    if (d <= 0) f |= 2;
    if (u[i] >= limit) f |= 4;
    if (v[i] != -d) f |= 8;
    flags[i] = f;
}
