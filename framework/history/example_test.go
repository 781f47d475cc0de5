package history_test

import (
	"fmt"

	"github.com/meshbench/meshbench/framework/history"
)

// A series whose mean halves after its tenth value (Apache Otava's
// test_single_series): one change point, at index 10.
func ExampleDetect() {
	xs := []float64{1.02, 0.95, 0.99, 1.00, 1.12, 1.00, 1.01, 0.98, 1.01, 0.96,
		0.50, 0.51, 0.48, 0.48, 0.55, 0.50, 0.49, 0.51, 0.50, 0.49}
	cps, err := history.Detect(xs, history.Options{Window: 10, PValue: 0.0001})
	if err != nil {
		panic(err)
	}
	for _, c := range cps {
		fmt.Printf("at %d: %.3f → %.3f (%+.1f %%), p < 1e-6: %v\n", c.Index, c.MeanBefore, c.MeanAfter, (c.Ratio()-1)*100, c.PValue < 1e-6)
	}
	// Output:
	// at 10: 1.004 → 0.501 (-50.1 %), p < 1e-6: true
}
