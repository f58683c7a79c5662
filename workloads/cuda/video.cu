// PTX's video min / max on 32-bit integers (VMNMX): a clamp and a bounded sum in one instruction each
extern "C" __global__ void video_min_max(const int* a, const int* b, const int* c, int* clamped, unsigned* summed,
                                         int* sat, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int r, s;
    unsigned u;
    asm("vmax.s32.s32.s32.min %0, %1, %2, %3;" : "=r"(r) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
    asm("vmin.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(u) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
    asm("vmax.s32.u32.s32.sat.add %0, %1, %2, %3;" : "=r"(s) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
    clamped[i] = r;
    summed[i] = u;
    sat[i] = s;
}
