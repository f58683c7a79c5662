// double precision as written: IEEE division and square root, fused multiply-adds, min / max

extern "C" __global__ void dp_divide_sqrt(const double* a, const double* b, double* q, double* r, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    q[i] = a[i] / b[i];
    r[i] = sqrt(fabs(b[i]));
}

// column standard deviations in double: sqrt(sum (x - mean)^2 / (m - 1))
extern "C" __global__ void dp_column_stddev(const double* A, double* sd, int m, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    double s = 0.0;
    for (int i = 0; i < m; i++) s += A[i * n + j];
    double mu = s / m;
    double q = 0.0;
    for (int i = 0; i < m; i++) {
        double d = A[i * n + j] - mu;
        q += d * d;
    }
    sd[j] = sqrt(q / (m - 1));
}

// a Horner polynomial and a clamp in double
extern "C" __global__ void dp_horner_clamp(const double* x, double* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i];
    double p = ((0.125 * v - 0.5) * v + 0.25) * v + 1.0;
    y[i] = fmin(fmax(p, -2.0), 2.0) + (v < 0.0 ? -1.0 : 1.0);
}

// float and double together: widening, narrowing, truncation to int, floor in double
extern "C" __global__ void dp_mixed(const double* a, const float* x, float* f, int* k, double* fl, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double p = a[i] * (double)x[i];
    f[i] = (float)p;
    k[i] = (int)a[i];
    fl[i] = floor(a[i]) + (double)i;
}
