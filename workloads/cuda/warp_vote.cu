// per-warp votes: how many lanes hold a positive value (__ballot_sync + __popc), whether all do
// (__all_sync) and whether any does (__any_sync), written by lane 0 of each warp
extern "C" __global__ void warp_vote(const float* x, int* counts, int* flags, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool pos = i < n && x[i] > 0.0f;
    unsigned int ballot = __ballot_sync(0xffffffffu, pos);
    int all = __all_sync(0xffffffffu, pos), any = __any_sync(0xffffffffu, pos);
    if ((threadIdx.x & 31) == 0) {
        int w = i >> 5;
        counts[w] = __popc(ballot);
        flags[w] = all * 2 + any;
    }
}
