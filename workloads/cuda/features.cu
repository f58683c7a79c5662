// the rest of what ptxas emits for ordinary CUDA C: __syncthreads_count / _and / _or, min / max,
// __byte_perm, float atomics, templates, __constant__ tables, early exits, boundary conditions

// per block: how many values are positive, whether all are above lo, whether any above hi
extern "C" __global__ void sync_count(const float* x, int* out, float lo, float hi)
{
    float v = x[blockIdx.x * blockDim.x + threadIdx.x];
    int count = __syncthreads_count(v > 0.0f);
    int all = __syncthreads_and(v > lo);
    int any = __syncthreads_or(v > hi);
    if (threadIdx.x == 0) out[blockIdx.x] = count * 4 + all * 2 + any;
}

// clamps with integer and float min / max
extern "C" __global__ void clamp_minmax(const int* a, const float* b, int* c, float* d, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    c[i] = min(max(a[i], -3), 7) + (int)umin((unsigned)a[i], 9u) + max(a[i], a[n - 1 - i]);
    d[i] = fminf(fmaxf(b[i], -1.0f), 1.0f) + fmaxf(b[i], b[n - 1 - i]);
}

// byte reversal and byte selection with __byte_perm
extern "C" __global__ void byte_perm(const unsigned* a, const unsigned* b, unsigned* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    c[i] = __byte_perm(a[i], 0, 0x0123) ^ __byte_perm(a[i], b[i], 0x7351) ^ __byte_perm(a[i], b[i], 0x8888);
}

// float atomics: a histogram of weights (atomicAdd on floats, a value returned and one not)
extern "C" __global__ void float_atomics(const int* bin, const float* w, float* hist, float* total, int* order, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&hist[bin[i]], w[i]);
    float before = atomicAdd(total, 1.0f);
    if (before < 0.0f) order[i] = -1;  // never: the count only grows
}

template <typename T, int K>
__global__ void scaled_sum(const T* x, const T* y, T* z, T alpha, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = alpha * x[i] + (T)K * y[i];
}
template __global__ void scaled_sum<float, 3>(const float*, const float*, float*, float, int);

__constant__ float weights[9] = {0.0625f, 0.125f, 0.0625f, 0.125f, 0.25f, 0.125f, 0.0625f, 0.125f, 0.0625f};

// a 3x3 blur with the weights in a __constant__ table and clamped (replicated) borders
extern "C" __global__ void blur_clamped(const float* in, float* out, int h, int w)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float s = 0.0f;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            int yy = y + dy, xx = x + dx;
            yy = yy < 0 ? 0 : (yy >= h ? h - 1 : yy);
            xx = xx < 0 ? 0 : (xx >= w ? w - 1 : xx);
            s += weights[(dy + 1) * 3 + dx + 1] * in[yy * w + xx];
        }
    out[y * w + x] = s;
}

// sums of the lower triangle of each row: row i adds A[i][0..i] (a triangular loop)
extern "C" __global__ void lower_row_sums(const float* A, float* s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float t = 0.0f;
    for (int j = 0; j <= i; j++) t += A[i * n + j];
    s[i] = t;
}

// a 1D heat step with fixed (Dirichlet) ends: interior points only, the ends copied
extern "C" __global__ void heat_dirichlet(const float* u, float* v, float r, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (i == 0 || i == n - 1) { v[i] = u[i]; return; }
    v[i] = u[i] + r * (u[i - 1] - 2.0f * u[i] + u[i + 1]);
}
