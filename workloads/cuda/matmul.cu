// C (m x n) = A (m x k) * B (k x n), row-major, one thread per element of C
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int m, int n, int k)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m || col >= n) return;
    float acc = 0.0f;
    for (int i = 0; i < k; i++) acc += A[row * k + i] * B[i * n + col];
    C[row * n + col] = acc;
}
