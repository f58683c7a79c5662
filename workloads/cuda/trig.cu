// sine and cosine at full precision: large arguments take the Payne-Hanek reduction (a table of
// 2/pi's bits in global memory, the partial products in a local array)
extern "C" __global__ void precise_sin_cos(const float* x, float* s, float* c, float* ss, float* cc, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    s[i] = sinf(v);
    c[i] = cosf(v);
    sincosf(v, &ss[i], &cc[i]);
}

// __device__ variables: an initialised table and scale, and a zero-filled array each thread
// writes and reads back
__device__ float weights[8] = {0.5f, -1.0f, 2.0f, 0.25f, -3.0f, 1.5f, 4.0f, -0.75f};
__device__ double offset = 0.125;
__device__ int slots[4096];

extern "C" __global__ void device_tables(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    slots[i] = i * 3 + 1;
    y[i] = x[i] * weights[i & 7] + (float)offset + (float)slots[i];
}
