// thread-private arrays indexed at run time: ptxas keeps them in local memory (LDL / STL)

// each thread sorts its row of k <= 16 values in a local array (insertion sort) and writes the
// sorted row and its median
extern "C" __global__ void row_sort(const float* x, float* sorted, float* median, int rows, int k)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float v[16];
    for (int i = 0; i < k; i++) {
        float e = x[r * k + i];
        int j = i - 1;
        while (j >= 0 && v[j] > e) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = e;
    }
    for (int i = 0; i < k; i++) sorted[r * k + i] = v[i];
    median[r] = (k & 1) ? v[k / 2] : 0.5f * (v[k / 2 - 1] + v[k / 2]);
}

// each thread counts the 4-bit digits of its words in a local histogram, then writes the counts
// weighted by their digit, and the most frequent digit (the smallest on a tie)
extern "C" __global__ void digit_counts(const unsigned* words, int* weighted, unsigned char* mode, int n, int per)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int count[16];
    for (int d = 0; d < 16; d++) count[d] = 0;
    for (int i = 0; i < per; i++) {
        unsigned w = words[t * per + i];
        for (int s = 0; s < 32; s += 4) count[(w >> s) & 15]++;
    }
    int sum = 0, best = 0;
    for (int d = 0; d < 16; d++) {
        sum += d * count[d];
        if (count[d] > count[best]) best = d;
    }
    weighted[t] = sum;
    mode[t] = (unsigned char)best;
}

// a small matrix per thread (double precision, dynamically indexed rows): Gaussian elimination
// with partial pivoting of an m x m system (m <= 6), solution written out
extern "C" __global__ void small_solve(const double* A, const double* b, double* x, int n, int m)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    double a[6][7];
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < m; j++) a[i][j] = A[(t * m + i) * m + j];
        a[i][m] = b[t * m + i];
    }
    for (int c = 0; c < m; c++) {
        int p = c;
        for (int i = c + 1; i < m; i++)
            if (fabs(a[i][c]) > fabs(a[p][c])) p = i;
        for (int j = 0; j <= m; j++) {
            double s = a[c][j];
            a[c][j] = a[p][j];
            a[p][j] = s;
        }
        for (int i = c + 1; i < m; i++) {
            double f = a[i][c] / a[c][c];
            for (int j = c; j <= m; j++) a[i][j] -= f * a[c][j];
        }
    }
    for (int i = m - 1; i >= 0; i--) {
        double s = a[i][m];
        for (int j = i + 1; j < m; j++) s -= a[i][j] * x[t * m + j];
        x[t * m + i] = s / a[i][i];
    }
}
