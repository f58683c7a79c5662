// one compare-exchange step (j, k) of a bitonic sort of n keys (n a power of two)
extern "C" __global__ void bitonic_step(int* keys, int j, int k)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int p = i ^ j;
    if (p > i) {
        int a = keys[i], b = keys[p];
        bool up = (i & k) == 0;
        if ((a > b) == up) { keys[i] = b; keys[p] = a; }
    }
}
