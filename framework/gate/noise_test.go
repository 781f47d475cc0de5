package gate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCalibrate(t *testing.T) {
	g := testGate(t)
	// A quiet A/A run: h = 0.029683 (see TestDecideEachOutcome), so a
	// change of e^h - 1 = 3.0 % is the smallest it could tell from none.
	// Pass needs t(N-1)/√N < ln 1.1 / 0.028284 = 3.3697: N=2 gives 8.98,
	// N=3 gives 4.3027/√3 = 2.484, so 3 pairs would have done.
	//
	// A noisy one: x = -0.2 … 0.2, sd √0.02 = 0.141421, h = 0.148413:
	// e^h - 1 = 16.0 % (0.159991) up, 1 - e^-h = 13.8 % down, beyond both limits.
	// CPU needs t(N-1)/√N < 0.095310/0.141421 = 0.673942: N=10 gives
	// 0.715357, N=11 gives 2.228139/√11 = 0.671810, so 11 pairs.
	// Throughput needs < 0.051293/0.141421 = 0.362700: N=31 gives
	// 2.042272/√31 = 0.366803, N=32 gives 2.039513/√32 = 0.360539, so 32.
	noisy := []float64{-0.2, -0.1, 0, 0.1, 0.2, 0}
	ns, err := g.Calibrate([]Measurement{
		measure(closed8, SidecarCPUPer1kReq, same...),
		measure(closed8, Throughput, noisy...),
		measure(open8, SidecarCPUPer1kReq, noisy...),
	})
	require.NoError(t, err)
	require.Len(t, ns, 3)

	assert.InDelta(t, 0.030127, ns[0].Detectable, 1e-6)
	assert.True(t, ns[0].CanPass)
	assert.Equal(t, 3, ns[0].PairsToPass)
	assert.False(t, ns[0].Biased)
	assert.Equal(t, "g.yaml:3: c=8/loop=closed/path=one-hop: sidecar CPU per 1k req: detectable change 3 % at n=6 (limit 10 %)", ns[0].Message)

	assert.InDelta(t, 0.137924, ns[1].Detectable, 1e-6)
	assert.False(t, ns[1].CanPass)
	assert.Equal(t, 32, ns[1].PairsToPass)
	assert.Equal(t, "g.yaml:6: c=8/loop=closed/path=one-hop: max throughput: this gate cannot pass honestly: detectable change 14 % at n=6 > limit 5 %; about 32 pairs would let it", ns[1].Message)

	assert.InDelta(t, 0.159991, ns[2].Detectable, 1e-6)
	assert.False(t, ns[2].CanPass)
	assert.Equal(t, 11, ns[2].PairsToPass)
	assert.Equal(t, "g.yaml:3: c=8/loop=open/path=one-hop: sidecar CPU per 1k req: this gate cannot pass honestly: detectable change 16 % at n=6 > limit 10 %; about 11 pairs would let it", ns[2].Message)
}

func TestCalibrateFlagsArmsThatDifferWithTheSameBuild(t *testing.T) {
	g := testGate(t)
	// x = 0.05, 0.06, 0.07 twice: mean 0.06, sd √0.00008 = 0.0089443,
	// h = 0.0093866: 1.061837 (1.051916–1.071851) excludes 1.
	ns, err := g.Calibrate([]Measurement{measure(open8, SidecarCPUPer1kReq, 0.05, 0.06, 0.07, 0.05, 0.06, 0.07)})
	require.NoError(t, err)
	require.Len(t, ns, 1)
	assert.True(t, ns[0].Biased)
	assert.True(t, ns[0].CanPass)
	assert.Equal(t, "g.yaml:3: c=8/loop=open/path=one-hop: sidecar CPU per 1k req: detectable change 0.9 % at n=6 (limit 10 %); the A/A ratio 1.062 (1.052–1.072) excludes 1: the arms differ even with the same build", ns[0].Message)
}

func TestCalibrateErrors(t *testing.T) {
	g := testGate(t)
	_, err := g.Calibrate(nil)
	assert.EqualError(t, err, "g.yaml: no A/A measurement is gated by any rule")
	_, err = g.Calibrate([]Measurement{measure(closed8, SidecarCPUPer1kReq, same...)})
	assert.EqualError(t, err, "gate: c=8/loop=closed/path=one-hop: throughput is gated by g.yaml:6 but was not measured")
}

func TestPct(t *testing.T) {
	assert.Equal(t, []string{"0.9 %", "3 %", "9.9 %", "10 %", "14 %", "150 %"},
		[]string{pct(0.0094), pct(0.0301), pct(0.0994), pct(0.0996), pct(0.1379), pct(1.5)})
}

// Against a stored run the noise is both runs' spread, counted in repeats
// of each run.
func TestCalibrateUnpaired(t *testing.T) {
	g := testGate(t)
	// The same three values in both runs, in another order: ratio 1, and
	// h = 0.226696 as in TestDecideUnpairedRepeats: e^h - 1 = 25.4 %; LogSD
	// √0.02 = 0.141421 needs 11 repeats for ln 1.1 (as in TestCalibrate).
	ns, err := g.Calibrate([]Measurement{unpaired(open8, SidecarCPUPer1kReq, []float64{0, 0.1, 0.2}, []float64{0.2, 0, 0.1})})
	require.NoError(t, err)
	require.Len(t, ns, 1)
	assert.InDelta(t, 0.254448, ns[0].Detectable, 1e-6)
	assert.False(t, ns[0].Biased)
	assert.Equal(t, 11, ns[0].PairsToPass)
	assert.Equal(t, "repeats in each run", ns[0].Unit())
	assert.Equal(t, "g.yaml:3: c=8/loop=open/path=one-hop: sidecar CPU per 1k req: this gate cannot pass honestly: detectable change 25 % at n=3 > limit 10 %; about 11 repeats in each run would let it", ns[0].Message)
}

// Too few valid repeats for an interval (one pair; a stored reference
// whose CPU figures were all diluted on a slow kind day) leave that
// metric without an estimate, said so, and the others estimated.
func TestCalibrateWithTooFewRepeats(t *testing.T) {
	g := testGate(t)
	ns, err := g.Calibrate([]Measurement{measure(open8, SidecarCPUPer1kReq, 0.1)})
	require.NoError(t, err)
	require.Len(t, ns, 1)
	assert.Equal(t, "no estimate: n=1 valid pairs, and an interval needs at least 2", ns[0].Unestimated)
	assert.Equal(t, "g.yaml:3: c=8/loop=open/path=one-hop: sidecar CPU per 1k req: no estimate: n=1 valid pairs, and an interval needs at least 2", ns[0].Message)

	diluted := unpaired(closed8, SidecarCPUPer1kReq, nil, []float64{0, 0.1, 0.2})
	diluted.LeftOut = "3 repeats left out: their CPU figures are not valid (cpu-diluted)"
	ns, err = g.Calibrate([]Measurement{diluted, unpaired(closed8, Throughput, []float64{0, 0.1, 0.2}, []float64{0.2, 0, 0.1})})
	require.NoError(t, err)
	require.Len(t, ns, 2)
	assert.Equal(t, "no estimate: the reference has n=0 valid repeats and this run n=3, and an interval needs at least 2 in each; 3 repeats left out: their CPU figures are not valid (cpu-diluted)", ns[0].Unestimated)
	assert.Empty(t, ns[1].Unestimated)
	assert.InDelta(t, 0.202837, ns[1].Detectable, 1e-6, "h = 0.226696 as in TestCalibrateUnpaired; throughput: 1 - e^-h")
}
