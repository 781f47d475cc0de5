package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A sweep of one concurrency is one point on a logarithmic c axis: gonum
// would widen the range through 0, which a log axis cannot draw (it
// panicked in the main job's report of a -concurrency 1 run).
func TestChartOfOnePoint(t *testing.T) {
	c := Chart{ID: "one", Kind: Lines, LogY: true, Series: []Series{{Name: "meshed", Points: []Point{{X: 1, Y: 0.7, Lo: 0.6, Hi: 0.8}}}}}
	svg, err := c.SVG()
	require.NoError(t, err)
	assert.Contains(t, svg, "<svg")
}
