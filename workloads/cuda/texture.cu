// out[i] = 2 * the i-th float of a 1D texture object (a bindless texture fetch)
extern "C" __global__ void tex_scale(cudaTextureObject_t tex, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * tex1Dfetch<float>(tex, i);
}
