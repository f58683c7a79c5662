// Kernels of different shapes for the sampled whole-GPU prediction (benchmarks/sampling_accuracy.py):
// each is launched over many waves of CTAs, sampled and in full, and the two are compared.

// 3 x 3 convolution of an h x w image (weights in a buffer), one thread a pixel; the border is copied
extern "C" __global__ void conv3x3(const float* __restrict__ in, const float* __restrict__ wt,
                                   float* out, int h, int w)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x >= w) return;
    if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) { out[y * w + x] = in[y * w + x]; return; }
    int i = y * w + x;
    float s = 0.0f;
    int u = i - w, d = i + w;
    s += wt[0] * in[u - 1] + wt[1] * in[u] + wt[2] * in[u + 1];
    s += wt[3] * in[i - 1] + wt[4] * in[i] + wt[5] * in[i + 1];
    s += wt[6] * in[d - 1] + wt[7] * in[d] + wt[8] * in[d + 1];
    out[i] = s;
}

// 2-D 5-point stencil; the border is copied
extern "C" __global__ void stencil2d(const float* __restrict__ in, float* out, int h, int w)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x >= w) return;
    int i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) { out[i] = in[i]; return; }
    out[i] = 0.5f * in[i] + 0.125f * (in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
}

// 3-D 7-point stencil over an n x n x d volume, one thread a column of z
extern "C" __global__ void stencil3d(const float* __restrict__ in, float* out, int n, int d)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x < 1 || x >= n - 1 || y < 1 || y >= n - 1) return;
    int plane = n * n;
    for (int z = 1; z < d - 1; z++) {
        int i = z * plane + y * n + x;
        out[i] = 0.4f * in[i] + 0.1f * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] + in[i - plane] + in[i + plane]);
    }
}

// per-CTA sum of 256 x 4 elements: a shared-memory tree
extern "C" __global__ void reduce_sum(const float* __restrict__ in, float* out, int n)
{
    __shared__ float part[256];
    int t = threadIdx.x;
    int base = blockIdx.x * 1024 + t;
    float s = 0.0f;
    for (int k = 0; k < 4; k++)
        if (base + k * 256 < n) s += in[base + k * 256];
    part[t] = s;
    __syncthreads();
    for (int half = 128; half > 0; half >>= 1) {
        if (t < half) part[t] += part[t + half];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = part[0];
}

// a triangular band: thread (x, y) of the lower triangle (x <= y) sums row y from x on, up to 64
// elements (CTAs above the diagonal leave at once, those near it work less)
extern "C" __global__ void tri_band(const float* __restrict__ a, float* out, int w)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x >= w || x > y) return;
    float s = 0.0f;
    for (int k = x; k <= y && k < x + 64; k++)
        s += a[y * w + k];
    out[y * w + x] = s;
}

// divergent CTAs: every eighth CTA iterates 16 times as long as the others
extern "C" __global__ void divergent_ctas(const float* __restrict__ in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int steps = (blockIdx.x % 8 == 0) ? 64 : 4;
    float v = in[i];
    for (int k = 0; k < steps; k++)
        v = v * 0.999f + 0.001f * __sinf(v);
    out[i] = v;
}

// matrix-vector product, row order: thread r reads row r (uncoalesced: 32 rows per request)
extern "C" __global__ void matvec_rows(const float* __restrict__ a, const float* __restrict__ x, float* y,
                                       int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; c++)
        s += a[r * cols + c] * x[c];
    y[r] = s;
}

// matrix-vector product, column order: A stored by columns, the warp reads consecutive rows
extern "C" __global__ void matvec_cols(const float* __restrict__ a, const float* __restrict__ x, float* y,
                                       int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; c++)
        s += a[c * rows + r] * x[c];
    y[r] = s;
}

// one time step of 1-D heat diffusion (launched once per step, in and out swapped)
extern "C" __global__ void heat_step(const float* __restrict__ in, float* out, int n, float alpha)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (i == 0 || i == n - 1) { out[i] = in[i]; return; }  // fixed ends
    float l = in[i - 1], c = in[i], r = in[i + 1];
    out[i] = c + alpha * (l - 2.0f * c + r);
}

// 5 x 5 box blur, one thread a pixel; a border of two pixels is copied
extern "C" __global__ void blur5(const float* __restrict__ in, float* out, int h, int w)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x >= w) return;
    if (x < 2 || y < 2 || x >= w - 2 || y >= h - 2) { out[y * w + x] = in[y * w + x]; return; }
    int i = y * w + x;
    float s = 0.0f;
    int u2 = i - 2 * w, u = i - w, d = i + w, d2 = i + 2 * w;
    s += in[u2 - 2] + in[u2 - 1] + in[u2] + in[u2 + 1] + in[u2 + 2];
    s += in[u - 2] + in[u - 1] + in[u] + in[u + 1] + in[u + 2];
    s += in[i - 2] + in[i - 1] + in[i] + in[i + 1] + in[i + 2];
    s += in[d - 2] + in[d - 1] + in[d] + in[d + 1] + in[d + 2];
    s += in[d2 - 2] + in[d2 - 1] + in[d2] + in[d2 + 1] + in[d2 + 2];
    out[i] = s * 0.04f;
}

// transpose of an h x w matrix through a 32 x 33 shared tile (block 32 x 8)
extern "C" __global__ void transpose_tiled(const float* __restrict__ in, float* out, int h, int w)
{
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < h && y + j < w) out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}

// naive SGEMM, C (rows x n) = A (rows x k) B (k x n), one thread an element of C
extern "C" __global__ void sgemm_naive(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                       int n, int k)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y;
    if (col >= n) return;
    float s = 0.0f;
    for (int j = 0; j < k; j++)
        s += a[row * k + j] * b[j * n + col];
    c[row * n + col] = s;
}

// SGEMM through 16 x 16 shared-memory tiles (block 16 x 16): C (rows x n) = A (rows x k) B (k x n),
// n and k multiples of 16
extern "C" __global__ void sgemm_tiled(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                       int n, int k)
{
    __shared__ float ta[16][16], tb[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float s = 0.0f;
    for (int k0 = 0; k0 < k; k0 += 16) {
        ta[ty][tx] = a[row * k + k0 + tx];
        tb[ty][tx] = b[(k0 + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < 16; k++)
            s += ta[ty][k] * tb[k][tx];
        __syncthreads();
    }
    c[row * n + col] = s;
}

// 1-D convolution of n samples with `taps` weights, the samples read through the texture path
// (a texture object: TLD), the weights from a buffer; one thread an output
extern "C" __global__ void conv_tex(cudaTextureObject_t in, const float* __restrict__ wt, float* out, int n,
                                   int taps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = 0; j < taps; j++)
        s += wt[j] * tex1Dfetch<float>(in, i + j);
    out[i] = s;
}

// sparse matrix-vector product in ELL format (`width` entries a row, stored column by column), the
// vector gathered through the texture path (a texture object: TLD); one thread a row
extern "C" __global__ void spmv_ell_tex(const int* __restrict__ col, const float* __restrict__ val,
                                       cudaTextureObject_t x, float* y, int rows, int width)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int j = 0; j < width; j++)
        s += val[j * rows + r] * tex1Dfetch<float>(x, col[j * rows + r]);
    y[r] = s;
}
