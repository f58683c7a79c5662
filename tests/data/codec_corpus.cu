// Kernels of our own for the instruction codec's tests: NVRTC compiles them for sm_52 and the
// tests decode the instruction words ptxas wrote (compared with cuobjdump / nvdisasm).
extern "C" {

__global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void reduce_shfl(const float *x, float *out, int n)
{
    __shared__ float part[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
        if (threadIdx.x == 0) atomicAdd(out, v);
    }
}

__global__ void histogram(const unsigned char *data, unsigned int *bins, int n)
{
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

__global__ void transpose(const float *in, float *out, int w, int h)
{
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    if (x < w && y < h) tile[threadIdx.y][threadIdx.x] = in[y * w + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    if (x < h && y < w) out[y * h + x] = tile[threadIdx.x][threadIdx.y];
}

__global__ void int_math(const int *a, int *out, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = a[i];
    unsigned int u = (unsigned int)v;
    int r = v / 7 + v % 13;
    r ^= (u >> 3) | (u << 5);
    r += __popc(u) + __clz(v) + __ffs(v);
    r = max(r, -100) + min(v, 100);
    r += (v > 3) ? v * v : v * 3;
    r += __brev(u) + __byte_perm(u, r, 0x3210);
    out[i] = r;
}

__global__ void float_math(const float *a, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i];
    float r = __expf(x) + __logf(fabsf(x) + 1.0f) + __sinf(x) * __cosf(x);
    r += sqrtf(fabsf(x)) + rsqrtf(fabsf(x) + 1.0f) + 1.0f / (x + 3.0f);
    r += floorf(x) + ceilf(x) + truncf(x) + rintf(x);
    r += (float)(int)x + (float)(unsigned int)fabsf(x);
    r = fminf(r, 1e30f) + fmaxf(x, -2.0f);
    out[i] = r;
}

__global__ void vote_ballot(const int *a, unsigned int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int p = i < n && a[i] > 0;
    unsigned int b = __ballot_sync(0xffffffff, p);
    int all = __all_sync(0xffffffff, p), any = __any_sync(0xffffffff, p);
    if (i < n) out[i] = b + all * 2 + any;
}

__global__ void stencil(const float *in, float *out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) return;
    int c = y * w + x;
    out[c] = 0.5f * in[c] + 0.125f * (in[c - 1] + in[c + 1] + in[c - w] + in[c + w]);
}

__constant__ float coeffs[16];

__global__ void poly(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], acc = 0.0f;
#pragma unroll
    for (int k = 15; k >= 0; --k) acc = acc * v + coeffs[k];
    y[i] = acc;
}

__global__ void scan_block(const int *in, int *out)
{
    __shared__ int s[256];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * 256 + t];
    __syncthreads();
    for (int o = 1; o < 256; o <<= 1) {
        int v = t >= o ? s[t - o] : 0;
        __syncthreads();
        s[t] += v;
        __syncthreads();
    }
    out[blockIdx.x * 256 + t] = s[t];
}

__global__ void divergent_loop(const int *a, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int x = a[i], y = a[(i + 1) % n], steps = 0;
    while (x != y && steps < 64) {
        if (x > y) x -= y; else y -= x;
        ++steps;
    }
    out[i] = x + steps;
}

__global__ void wide_loads(const float4 *in, float4 *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 v = __ldg(&in[i]);
    double d = (double)v.x * (double)v.y;
    out[i] = make_float4(v.w, v.z, (float)d, v.x);
}

}
