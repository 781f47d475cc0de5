package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKneeIsTheLastRateBeforeTheP99Doubles(t *testing.T) {
	pts := func(xy ...float64) []Point {
		var out []Point
		for i := 0; i < len(xy); i += 2 {
			out = append(out, Point{X: xy[i], Y: xy[i+1]})
		}
		return out
	}
	k, ok := knee(pts(100, 1, 200, 1.5, 300, 2, 400, 5))
	assert.True(t, ok)
	assert.Equal(t, Point{X: 300, Y: 2}, k, "2× is still under the knee; 5× is past it")
	k, ok = knee(pts(100, 1, 200, 3))
	assert.True(t, ok)
	assert.Equal(t, Point{X: 100, Y: 1}, k, "bent at once")
	_, ok = knee(pts(100, 1))
	assert.False(t, ok, "one point has no curve")
}

// A run with nothing measured for a chart still draws: an empty frame.
func TestEmptyChartsDraw(t *testing.T) {
	for _, k := range []ChartKind{Lines, Spectrum, Rate, Stacked, Points} {
		for _, c := range []Chart{{ID: "none", Kind: k}, {ID: "empty", Kind: k, LogY: true, Series: []Series{{Name: "x"}}}} {
			svg, err := c.SVG()
			assert.NoError(t, err, "%s %s", k, c.ID)
			assert.Contains(t, svg, "<svg", "%s %s", k, c.ID)
		}
	}
}
