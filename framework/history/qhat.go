package history

import "math"

// calculator finds E-divisive's candidate split of a segment: the τ that
// maximises, over start < τ < κ ≤ end,
//
//	Q(τ, κ) = 2/(m+n) Σ|Xᵢ-Yⱼ| - 2m/((m+n)(n-1)) Σᵢ<ₖ|Xᵢ-Xₖ| - 2n/((m+n)(m-1)) Σⱼ<ₖ|Yⱼ-Yₖ|
//
// with X = xs[start:τ] (n values) and Y = xs[τ:κ] (m values), a term
// whose denominator is 0 being 0. It follows Otava's
// PairDistanceCalculator step by step: the same cumulative sums in the
// same order, so that near-ties between candidates break the same way.
type calculator struct {
	d [][]float64 // d[i][j] = |xs[i] - xs[j]|
	// v[c] = Σ_{i<c+1} d[i][c+1]; h[r][c] = Σ_{r<j≤c+1} d[r][j].
	v []float64
	h [][]float64
}

func newCalculator(xs []float64) *calculator {
	n := len(xs)
	c := &calculator{d: square(n)}
	for i := range n {
		for j := range n {
			c.d[i][j] = math.Abs(xs[i] - xs[j])
		}
	}
	if n < 2 {
		return c
	}
	c.v, c.h = make([]float64, n-1), square(n-1)
	for r := range n - 1 {
		sum := 0.0
		for col := range n - 1 {
			t := 0.0
			if r <= col {
				t = c.d[r][col+1]
			}
			c.v[col] += t
			sum += t
			c.h[r][col] = sum
		}
	}
	return c
}

func square(n int) [][]float64 {
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
	}
	return m
}

// candidate returns the best split of xs[start:end] (end-start ≥ 2) and
// its q̂: the first maximum of Q in row-major order (τ, then κ), as numpy's
// argmax finds it.
func (c *calculator) candidate(start, end int) (int, float64) {
	q := c.q(start, end)
	bi, bj := 0, 0
	for i := range q {
		for j := range q[i] {
			if q[i][j] > q[bi][bj] {
				bi, bj = i, j
			}
		}
	}
	return bi + 1 + start, q[bi][bj]
}

// q is the matrix Q[i][j] = Q(τ = start+1+i, κ = start+2+j), 0 where
// κ ≤ τ: A - B - C of Otava's _get_Q_vals.
func (c *calculator) q(start, end int) [][]float64 {
	m := end - 1 - start
	vs := make([]float64, m)
	cumV := make([]float64, m)
	for k := range m {
		sub := 0.0
		for i := range start {
			sub += c.d[i][start+1+k]
		}
		vs[k] = c.v[start+k] - sub
		cumV[k] = vs[k]
		if k > 0 {
			cumV[k] += cumV[k-1]
		}
	}
	hs := func(a, b int) float64 { return c.h[start+a][start+b] }
	cumH := square(m) // Σ_{a'≤a} hs(a', b)
	for a := range m {
		for b := range m {
			cumH[a][b] = hs(a, b)
			if a > 0 {
				cumH[a][b] += cumH[a-1][b]
			}
		}
	}
	below := square(max(m-1, 0)) // below[i][c] = Σ_{a=i}^{m-2} hs(a+1, c+1), summed upwards
	for i := m - 2; i >= 0; i-- {
		for col := range m - 1 {
			below[i][col] = hs(i+1, col+1)
			if i < m-2 {
				below[i][col] += below[i+1][col]
			}
		}
	}
	q := square(m)
	for i := range m {
		for j := i; j < m; j++ {
			q[i][j] = qAt(start, i, j, cumH, cumV, below)
		}
	}
	return q
}

// qAt is one entry (j ≥ i) of q.
func qAt(start, i, j int, cumH [][]float64, cumV []float64, below [][]float64) float64 {
	tau, kappa := start+1+i, start+2+j
	prevV := 0.0
	if i >= 1 {
		prevV = cumV[i-1]
	}
	a := 2 / float64(kappa-start) * (cumH[i][j] - prevV)
	b := 0.0
	if den := (kappa - start) * (tau - start - 1); i >= 1 && j >= 1 && den != 0 {
		b = float64(2*(kappa-tau)) / float64(den) * prevV
	}
	cc := 0.0
	if den := (kappa - start) * (kappa - tau - 1); j > i && den != 0 {
		cc = float64(2*(tau-start)) / float64(den) * below[i][j-1]
	}
	return a - b - cc
}
