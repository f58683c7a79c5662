// column statistics of a row-major m x n matrix, one thread per column, from their definitions

// mean_j = (1/m) sum_i A[i][j]
extern "C" __global__ void column_means(const float* A, float* mean, int m, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float s = 0.0f;
    for (int i = 0; i < m; i++) s += A[i * n + j];
    mean[j] = s / (float)m;
}

// sample standard deviation: sqrt(sum_i (A[i][j] - mean_j)^2 / (m - 1)), two passes
extern "C" __global__ void column_stddev(const float* A, float* sd, int m, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float s = 0.0f;
    for (int i = 0; i < m; i++) s += A[i * n + j];
    float mu = s / m;
    float q = 0.0f;
    for (int i = 0; i < m; i++) {
        float d = A[i * n + j] - mu;
        q += d * d;
    }
    sd[j] = sqrtf(q / (m - 1));
}

// Pearson correlation of columns j and k (the upper triangle j <= k; the thread of j > k exits)
extern "C" __global__ void column_correlation(const float* A, float* corr, int m, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (j >= n || k >= n || j > k) return;
    float sj = 0.0f, sk = 0.0f;
    for (int i = 0; i < m; i++) { sj += A[i * n + j]; sk += A[i * n + k]; }
    float mj = sj / m, mk = sk / m;
    float cjk = 0.0f, cjj = 0.0f, ckk = 0.0f;
    for (int i = 0; i < m; i++) {
        float dj = A[i * n + j] - mj, dk = A[i * n + k] - mk;
        cjk += dj * dk;
        cjj += dj * dj;
        ckk += dk * dk;
    }
    float r = cjk / (sqrtf(cjj) * sqrtf(ckk));
    corr[j * n + k] = r;
    corr[k * n + j] = r;
}
