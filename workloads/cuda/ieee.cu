// IEEE fp32 division and square root as written (NVRTC's defaults: -prec-div=true -prec-sqrt=true)
extern "C" __global__ void ieee_divide(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] / b[i];
}

// 1/x and sqrt(x) of each element, two outputs
extern "C" __global__ void recip_sqrt(const float* x, float* r, float* s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    r[i] = 1.0f / v;
    s[i] = sqrtf(v);
}

struct Vec3 { float x, y, z; };

// normalize 3-vectors (array of structs), with a struct passed by value as the scale
extern "C" __global__ void normalize3(Vec3* v, Vec3 scale, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Vec3 p = v[i];
    float len = sqrtf(p.x * p.x + p.y * p.y + p.z * p.z);
    p.x = p.x / len * scale.x;
    p.y = p.y / len * scale.y;
    p.z = p.z / len * scale.z;
    v[i] = p;
}
