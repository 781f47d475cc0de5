package labels_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/labels"
)

func TestParse(t *testing.T) {
	got := labels.Parse("BenchmarkPayload/payload=16KiB/c=8/arm=meshed")
	assert.Equal(t, labels.Set{{"benchmark", "BenchmarkPayload"}, {"payload", "16KiB"}, {"c", "8"}, {"arm", "meshed"}}, got)
	assert.Equal(t, "BenchmarkPayload/payload=16KiB/c=8/arm=meshed", got.String())
	assert.Equal(t, "BenchmarkPayload/payload=16KiB/c=8", got.Without(labels.Arm).String())

	// A plain sub-benchmark name is kept, not dropped; a repeated name keeps
	// testing's #01 so two sweeps stay two scenarios.
	got = labels.Parse("BenchmarkX/fast/qps=100#01/c=1")
	assert.Equal(t, labels.Set{{"benchmark", "BenchmarkX"}, {"sub1", "fast"}, {"qps", "100#01"}, {"c", "1"}}, got)
	assert.Empty(t, labels.Parse(""))
	assert.Equal(t, labels.Set{{"c", "1"}}, labels.Parse("/c=1"))
}

func TestWithReplacesInPlace(t *testing.T) {
	s := labels.Set{{"benchmark", "B"}, {"c", "1"}}
	assert.Equal(t, labels.Set{{"benchmark", "B"}, {"c", "2"}}, s.With("c", "2"))
	assert.Equal(t, labels.Set{{"benchmark", "B"}, {"c", "1"}, {"arm", "meshed"}}, s.With("arm", "meshed"))
	assert.Equal(t, labels.Set{{"benchmark", "B"}, {"c", "1"}}, s, "With copies")
	v, ok := s.Get("c")
	assert.True(t, ok)
	assert.Equal(t, "1", v)
	assert.Equal(t, "", s.Value("payload"))
}

func TestMatches(t *testing.T) {
	s := labels.Parse("BenchmarkPayload/payload=16KiB/c=8")
	for want, ok := range map[string]bool{
		`{}`:                              true,
		`{"payload":"16KiB"}`:             true,
		`{"payload":"1?KiB","c":"8"}`:     true,
		`{"benchmark":"*Payload"}`:        true,
		`{"payload":"1KiB"}`:              false,
		`{"qps":"100"}`:                   false,
		`{"qps":"*"}`:                     true, // "*" also matches a label the scenario lacks
		`{"payload":"[","benchmark":"*"}`: false,
	} {
		var m map[string]string
		require.NoError(t, json.Unmarshal([]byte(want), &m))
		assert.Equal(t, ok, s.Matches(m), want)
	}
}

func TestJSONKeepsOrder(t *testing.T) {
	s := labels.Parse("BenchmarkPayload/payload=16KiB/c=8")
	data, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Equal(t, `{"benchmark":"BenchmarkPayload","payload":"16KiB","c":"8"}`, string(data))
	var back labels.Set
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, s, back)
	assert.Error(t, json.Unmarshal([]byte(`["c"]`), &back))
	assert.Error(t, json.Unmarshal([]byte(`{"c":8}`), &back))
}
