// dense linear algebra from the definitions

// y = A x, one thread per row (row-major A: the threads of a warp read rows apart)
extern "C" __global__ void matvec_rows(const float* A, const float* x, float* y, int m, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    float s = 0.0f;
    for (int j = 0; j < n; j++) s += A[i * n + j] * x[j];
    y[i] = s;
}

// y = A^T x, one thread per column (the threads of a warp read one row together)
extern "C" __global__ void matvec_cols(const float* A, const float* x, float* y, int m, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float s = 0.0f;
    for (int i = 0; i < m; i++) s += A[i * n + j] * x[i];
    y[j] = s;
}

// LU factorization without pivoting of one n x n matrix (n <= blockDim.x) in place, one CTA:
// thread i owns row i; step k divides the column below the pivot and updates the trailing rows
extern "C" __global__ void lu_inplace(float* A, int n)
{
    int i = threadIdx.x;
    for (int k = 0; k < n - 1; k++) {
        if (i > k && i < n) {
            float l = A[i * n + k] / A[k * n + k];
            A[i * n + k] = l;
            for (int j = k + 1; j < n; j++) A[i * n + j] -= l * A[k * n + j];
        }
        __syncthreads();
    }
}

// modified Gram-Schmidt of the n columns of a row-major m x n matrix (m <= blockDim.x), one CTA:
// thread i owns row i; column norms and projections are reduced in shared memory
extern "C" __global__ void gram_schmidt(float* Q, float* R, int m, int n)
{
    __shared__ float part[256];
    int i = threadIdx.x;
    for (int k = 0; k < n; k++) {
        float v = i < m ? Q[i * n + k] : 0.0f;
        part[i] = v * v;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (i < s) part[i] += part[i + s];
            __syncthreads();
        }
        float norm = sqrtf(part[0]);
        __syncthreads();
        if (i < m) Q[i * n + k] = v / norm;
        if (i == 0) R[k * n + k] = norm;
        __syncthreads();
        for (int j = k + 1; j < n; j++) {
            part[i] = i < m ? Q[i * n + k] * Q[i * n + j] : 0.0f;
            __syncthreads();
            for (int s = blockDim.x / 2; s > 0; s >>= 1) {
                if (i < s) part[i] += part[i + s];
                __syncthreads();
            }
            float r = part[0];
            __syncthreads();
            if (i < m) Q[i * n + j] -= r * Q[i * n + k];
            if (i == 0) R[k * n + j] = r;
            __syncthreads();
        }
    }
}

// one alternating-direction sweep: a tridiagonal system (-a, 1 + 2a, -a) along each row (x sweep)
// or each column (y sweep) of an h x w grid, solved by the Thomas algorithm, one thread per line;
// the line's scratch (c') lives in global memory
extern "C" __global__ void adi_sweep(const float* u, float* out, float* scratch, float a, int h, int w, int along_x)
{
    int line = blockIdx.x * blockDim.x + threadIdx.x;
    int lines = along_x ? h : w, len = along_x ? w : h;
    if (line >= lines) return;
    int step = along_x ? 1 : w;
    int base = along_x ? line * w : line;
    float b = 1.0f + 2.0f * a;
    float* cp = scratch + line * len;
    // forward elimination
    float denom = b;
    cp[0] = -a / denom;
    out[base] = u[base] / denom;
    for (int k = 1; k < len; k++) {
        denom = b + a * cp[k - 1];
        cp[k] = -a / denom;
        out[base + k * step] = (u[base + k * step] + a * out[base + (k - 1) * step]) / denom;
    }
    // back substitution
    for (int k = len - 2; k >= 0; k--) out[base + k * step] -= cp[k] * out[base + (k + 1) * step];
}
