// signed division and remainder by constants (ptxas: multiply-high by a magic number in XMADs)
extern "C" __global__ void signed_div(const int* x, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = x[i];
    out[i] = v / 7 + (v % 10) * 1000 + (v / -3) * 7 + v / 65537;
}
