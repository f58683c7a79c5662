// integer-heavy index math: a hash of the index with multiplies, divisions, remainders and shifts
extern "C" __global__ void index_math(unsigned int* out, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned int h = (unsigned int)i * 2654435761u;
    h ^= h >> 13;
    out[i] = (h % (unsigned int)m) + (unsigned int)(i / 7) * 3u + ((unsigned int)i << 5 | (unsigned int)i >> 27);
}
