// transcendental functions at their default (full) precision, fp32 and fp64
extern "C" __global__ void precise_exp_log(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = expf(x[i]) + logf(1.0f + x[i] * x[i]);
}

extern "C" __global__ void precise_pow_tanh(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = powf(fabsf(x[i]), 1.5f) + tanhf(x[i]);
}

extern "C" __global__ void precise_dexp_log(const double* x, double* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = exp(x[i]) + log(1.0 + x[i] * x[i]);
}

// a pipeline's middle step: subtract each column's mean (from column_means) in place
extern "C" __global__ void center_columns(float* A, const float* mean, int m, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y;
    if (j < n && i < m) A[i * n + j] -= mean[j];
}
