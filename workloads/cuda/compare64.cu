// fp64 comparisons turned into numbers (ptxas's DSET), and fp64 <-> fp16 conversions (PTX
// cvt.rn.f16.f64 / cvt.f64.f16, as cuda_fp16.h's __double2half and a half's widening write them)
extern "C" __global__ void dp_compare_flags(const double* a, const double* b, float* below, int* mask, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float lt;
    asm("set.lt.f32.f64 %0, %1, %2;" : "=f"(lt) : "d"(a[i]), "d"(b[i]));  // 1.0f / 0.0f: DSET.BF
    below[i] = lt;
    mask[i] = -(int)(a[i] >= b[i]);
}

extern "C" __global__ void dp_half_round_trip(const double* x, unsigned short* h, double* back, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned short bits;
    double wide;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(bits) : "d"(x[i]));
    asm("cvt.f64.f16 %0, %1;" : "=d"(wide) : "h"(bits));
    h[i] = bits;
    back[i] = wide;
}
